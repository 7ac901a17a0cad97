// Trace driver of the memory model alone (simulation only; Verilator --binary --timing).
//
// Mirrors the issue semantics of hw/hbm_model/reference.py run_requests with PORTS request and
// response ports, so that Python only writes the trace and reads the results (sim/hbm.py):
//   * requests are offered in trace order on ports 0, 1, ...: in cycle t port k offers request
//     nxt + k (nxt: the first not yet accepted) iff ports 0..k-1 offer, k < LIMIT - outstanding
//     (accepted, response not yet transferred, at the start of t), and issue_cycle <= t; the model
//     accepts a prefix of them (docs/hbm_model.md §2 Ingress);
//   * resp.ready of every response port in cycle t is bit t of the +READY= file (64 cycles per
//     word, cycle 0 in bit 0), or always 1 without it;
//   * the tag of request i is i mod 2^TAG_BITS; a request whose tag is still outstanding is not
//     offered, nor are the ones after it (counted in `tag_stalls`, which the harness requires to
//     be 0: otherwise the run would differ from the reference).
// The model is the flat wrapper ember_hbm_top of sim/hbm.py: port k's payload is bits
// [k*W +: W] of req_payload / resp_payload (the StructLayouts of hw/hbm_model/ports.py).
// Cycle 0 is the first cycle after reset (the model's reset also starts its refresh timer).
// refresh_restart is high in the cycles listed in the +RESTART= file (+NRESTART= of them,
// increasing; reference.run_requests' refresh_restarts).
// Files (plusargs): +ADDR= +META= (issue_cycle[39:0], write[40]) +WDATA= (LINE_BITS per request)
// +WSTRB= (LINE_BITS/8 per request) +IMAGE= (optional storage image) +READY= (optional); +N=
// requests, +LIMIT= outstanding, +READY_LEN= cycles covered by +READY=; results: +OUT_ACCEPT=
// +OUT_COMPLETE= +OUT_DATA= +OUT_STATS= +OUT_INFO= (cycles, tag_stalls, overflow).
`timescale 1ns/1ps
module ember_hbm_tb #(
    parameter TAG_BITS  = 12,
    parameter NSTATS    = 1,
    parameter PORTS     = 1,
    parameter LINE_BITS = 64,
    parameter MAXN      = 1 << 20,
    parameter MAXREADY  = 1 << 20,
    parameter MAXRESTART = 1 << 12
) ();
    localparam LINE_BYTES = LINE_BITS / 8;
    localparam REQ_W  = 64 + TAG_BITS + 1 + LINE_BITS + LINE_BYTES;
    localparam RESP_W = TAG_BITS + 1 + LINE_BITS;

    reg clk = 1'b0;
    always #1 clk = ~clk;
    reg rst = 1'b1;
    reg image_load = 1'b0;

    reg [63:0]           req_addr  [0:MAXN-1];
    reg [63:0]           req_meta  [0:MAXN-1];
    reg [LINE_BITS-1:0]  req_wdata [0:MAXN-1];
    reg [LINE_BYTES-1:0] req_wstrb [0:MAXN-1];
    reg [63:0]           ready_bits [0:MAXREADY-1];
    reg [63:0]           restart_at [0:MAXRESTART-1];
    reg [63:0]           out_accept [0:MAXN-1];
    reg [63:0]           out_complete [0:MAXN-1];
    reg [LINE_BITS-1:0]  out_data [0:MAXN-1];
    reg [63:0]           out_stats [0:NSTATS-1];
    reg [63:0]           out_info [0:2];
    reg [31:0]           tag_owner [0:(1 << TAG_BITS)-1];
    reg                  tag_busy  [0:(1 << TAG_BITS)-1];

    reg [8*1024-1:0] f_addr, f_meta, f_wdata, f_wstrb, f_ready, f_acc, f_cmp, f_data, f_stats, f_info,
                     f_restart;
    integer n_req = 0, limit = 0, ready_len = 0, use_ready = 0, n_restart = 0, i;
    reg [31:0] ri = 0;                // next refresh restart

    reg [63:0] t = 0;                 // unit cycle
    reg [31:0] nxt = 0;               // first request not yet accepted
    reg [31:0] done = 0;
    reg [31:0] outstanding = 0;
    reg [63:0] tag_stalls = 0;
    reg        running = 1'b0;
    reg        finished = 1'b0;
    reg        overflow = 1'b0;

    // The model.
    reg  [PORTS-1:0]        req_valid;
    wire [PORTS-1:0]        req_ready;
    reg  [PORTS*REQ_W-1:0]  req_payload;
    wire [PORTS-1:0]        resp_valid;
    wire [PORTS*RESP_W-1:0] resp_payload;
    wire                    ready_now = !use_ready || ready_bits[t[25:6]][t[5:0]];
    wire [PORTS-1:0]        resp_ready = {PORTS{running && ready_now}};
    wire [64*NSTATS-1:0]    stats;
    wire                    refresh_restart = running && ri < n_restart && restart_at[ri[11:0]] == t;

    // Offers of this cycle (a prefix of ports), acceptances and transfers.
    reg        stop, stall;
    reg [31:0] idx, n_acc, n_resp;
    integer    k;
    always @* begin
        stop = 1'b0;
        stall = 1'b0;
        req_payload = 0;
        for (k = 0; k < PORTS; k = k + 1) begin
            idx = nxt + k;
            req_valid[k] = 1'b0;
            if (!stop && running && idx < n_req && k < limit - outstanding
                    && req_meta[idx[19:0]][39:0] <= t[39:0]) begin
                if (tag_busy[idx[TAG_BITS-1:0]]) begin
                    stall = 1'b1;
                    stop = 1'b1;
                end else
                    req_valid[k] = 1'b1;
            end else
                stop = 1'b1;
            req_payload[k*REQ_W +: REQ_W] = {req_wstrb[idx[19:0]], req_wdata[idx[19:0]],
                                             req_meta[idx[19:0]][40], idx[TAG_BITS-1:0],
                                             req_addr[idx[19:0]]};
        end
    end
    integer j;
    always @* begin
        n_acc = 0;
        n_resp = 0;
        for (j = 0; j < PORTS; j = j + 1) begin
            if (req_valid[j] && req_ready[j]) n_acc = n_acc + 1;
            if (resp_valid[j] && resp_ready[j]) n_resp = n_resp + 1;
        end
    end

    ember_hbm_top dut (
        .clk(clk), .rst(rst),
        .req_valid(req_valid), .req_ready(req_ready), .req_payload(req_payload),
        .resp_valid(resp_valid), .resp_ready(resp_ready), .resp_payload(resp_payload),
        .image_load(image_load), .refresh_restart(refresh_restart), .stats(stats)
    );

    initial begin
        if (!$value$plusargs("N=%d", n_req)) n_req = 0;
        if (!$value$plusargs("LIMIT=%d", limit)) limit = 32'h7FFF_FFFF;
        if ($value$plusargs("READY_LEN=%d", ready_len)) use_ready = 1;
        if (!$value$plusargs("NRESTART=%d", n_restart)) n_restart = 0;
        if (n_restart > MAXRESTART) begin
            $display("hbm_tb: NRESTART=%0d exceeds MAXRESTART=%0d", n_restart, MAXRESTART);
            $finish;
        end
        if (n_restart > 0) begin
            i = ($value$plusargs("RESTART=%s", f_restart));
            $readmemh(f_restart, restart_at, 0, n_restart - 1);
        end
        if (n_req > MAXN) begin
            $display("hbm_tb: N=%0d exceeds MAXN=%0d", n_req, MAXN);
            $finish;
        end
        i = ($value$plusargs("ADDR=%s", f_addr));
        i = ($value$plusargs("META=%s", f_meta));
        i = ($value$plusargs("WDATA=%s", f_wdata));
        i = ($value$plusargs("WSTRB=%s", f_wstrb));
        i = ($value$plusargs("OUT_ACCEPT=%s", f_acc));
        i = ($value$plusargs("OUT_COMPLETE=%s", f_cmp));
        i = ($value$plusargs("OUT_DATA=%s", f_data));
        i = ($value$plusargs("OUT_STATS=%s", f_stats));
        i = ($value$plusargs("OUT_INFO=%s", f_info));
        for (i = 0; i < (1 << TAG_BITS); i = i + 1) tag_busy[i] = 1'b0;
        if (n_req > 0) begin
            $readmemh(f_addr, req_addr, 0, n_req - 1);
            $readmemh(f_meta, req_meta, 0, n_req - 1);
            $readmemh(f_wdata, req_wdata, 0, n_req - 1);
            $readmemh(f_wstrb, req_wstrb, 0, n_req - 1);
        end
        if (use_ready) begin
            i = ($value$plusargs("READY=%s", f_ready));
            $readmemh(f_ready, ready_bits, 0, (ready_len + 63) / 64 - 1);
        end
        // One reset edge, with the storage image loaded at it (+IMAGE=, if the model has storage).
        image_load = $test$plusargs("IMAGE=");
        @(posedge clk);
        #0.5;
        rst = 1'b0;
        image_load = 1'b0;
        running = 1'b1;
    end

    integer p;
    reg [31:0] a, owner;
    reg [TAG_BITS-1:0] rtag;
    always @(posedge clk) if (running) begin
        if (stall) tag_stalls <= tag_stalls + 1;
        for (p = 0; p < PORTS; p = p + 1) begin
            if (req_valid[p] && req_ready[p]) begin
                a = nxt + p;
                out_accept[a[19:0]] <= t;
                tag_owner[a[TAG_BITS-1:0]] <= a;
                tag_busy[a[TAG_BITS-1:0]] <= 1'b1;
            end
            if (resp_valid[p] && resp_ready[p]) begin
                rtag = resp_payload[p*RESP_W +: TAG_BITS];
                owner = tag_owner[rtag];
                out_complete[owner[19:0]] <= t;
                out_data[owner[19:0]] <= resp_payload[p*RESP_W + TAG_BITS + 1 +: LINE_BITS];
                tag_busy[rtag] <= 1'b0;
            end
        end
        if (refresh_restart) ri <= ri + 1;
        nxt <= nxt + n_acc;
        done <= done + n_resp;
        outstanding <= outstanding + n_acc - n_resp;
        t <= t + 1;
        if (done + n_resp == n_req || (use_ready && t + 1 >= ready_len)) begin
            running <= 1'b0;
            finished <= 1'b1;
            overflow <= done + n_resp != n_req;
        end
    end

    initial begin
        wait (finished);
        #0.5;
        begin
            for (i = 0; i < NSTATS; i = i + 1) out_stats[i] = stats[64*i +: 64];
            out_info[0] = t;             // cycles = last completion cycle + 1
            out_info[1] = tag_stalls;
            out_info[2] = {63'd0, overflow};
            if (n_req > 0) begin
                $writememh(f_acc, out_accept, 0, n_req - 1);
                $writememh(f_cmp, out_complete, 0, n_req - 1);
                $writememh(f_data, out_data, 0, n_req - 1);
            end
            $writememh(f_stats, out_stats);
            $writememh(f_info, out_info);
            $finish;
        end
    end
endmodule
