// Trace driver of the memory model alone (simulation only; Verilator --binary --timing).
//
// Mirrors the issue semantics of hw/hbm_model/reference.py run_requests with one port, so that
// Python only writes the trace and reads the results (sim/hbm.py):
//   * requests are offered in trace order; request i is offered in cycle t iff it is the first
//     not yet accepted, issue_cycle_i <= t, and fewer than LIMIT requests are outstanding at the
//     start of t (accepted, response not yet transferred);
//   * resp.ready in cycle t is bit t of the +READY= file (64 cycles per word, cycle 0 in bit 0),
//     or always 1 without it;
//   * the tag of request i is i mod 2^TAG_BITS; a request whose tag is still outstanding is not
//     offered (counted in `tag_stalls`, which the harness requires to be 0: otherwise the run
//     would differ from the reference).
// Cycle 0 is the first cycle after reset (the model's reset also starts its refresh timer).
// Files (plusargs): +ADDR= +META= (issue_cycle[39:0], write[40], wstrb[55:48]) +WDATA= +IMAGE=
// (optional storage image) +READY= (optional); +N= requests, +LIMIT= outstanding, +READY_LEN=
// cycles covered by +READY=; results: +OUT_ACCEPT= +OUT_COMPLETE= +OUT_DATA= +OUT_STATS= +OUT_INFO=
// (cycles, tag_stalls, overflow).
`timescale 1ns/1ps
module ember_hbm_tb #(
    parameter TAG_BITS = 12,
    parameter NSTATS   = 1,
    parameter MAXN     = 1 << 20,
    parameter MAXREADY = 1 << 20
) ();
    reg clk = 1'b0;
    always #1 clk = ~clk;
    reg rst = 1'b1;
    reg image_load = 1'b0;

    reg [63:0] req_addr  [0:MAXN-1];
    reg [63:0] req_meta  [0:MAXN-1];
    reg [63:0] req_wdata [0:MAXN-1];
    reg [63:0] ready_bits [0:MAXREADY-1];
    reg [63:0] out_accept [0:MAXN-1];
    reg [63:0] out_complete [0:MAXN-1];
    reg [63:0] out_data [0:MAXN-1];
    reg [63:0] out_stats [0:NSTATS-1];
    reg [63:0] out_info [0:2];
    reg [31:0] tag_owner [0:(1 << TAG_BITS)-1];
    reg        tag_busy  [0:(1 << TAG_BITS)-1];

    reg [8*1024-1:0] f_addr, f_meta, f_wdata, f_ready, f_acc, f_cmp, f_data, f_stats, f_info;
    integer n_req = 0, limit = 0, ready_len = 0, use_ready = 0, i;

    reg [63:0] t = 0;                 // unit cycle
    reg [31:0] nxt = 0;               // first request not yet accepted
    reg [31:0] done = 0;
    reg [31:0] outstanding = 0;
    reg [63:0] tag_stalls = 0;
    reg        running = 1'b0;
    reg        finished = 1'b0;
    reg        overflow = 1'b0;

    // The model.
    wire                 req_ready, resp_valid;
    wire [TAG_BITS-1:0]  resp_tag;
    wire                 resp_write;
    wire [63:0]          resp_data;
    wire [64*NSTATS-1:0] stats;
    wire [63:0]          cur_addr  = req_addr[nxt[19:0]];
    wire [63:0]          cur_meta  = req_meta[nxt[19:0]];
    wire [TAG_BITS-1:0]  cur_tag   = nxt[TAG_BITS-1:0];
    wire                 cur_write = cur_meta[40];
    wire                 can_offer = running && nxt < n_req && cur_meta[39:0] <= t[39:0]
                                     && outstanding < limit;
    wire                 req_valid = can_offer && !tag_busy[cur_tag];
    wire                 ready_now = !use_ready || ready_bits[t[25:6]][t[5:0]];
    wire                 resp_ready = running && ready_now;

    ember_hbm_top dut (
        .clk(clk), .rst(rst),
        .req__valid(req_valid), .req__ready(req_ready),
        .req__payload({cur_meta[55:48], req_wdata[nxt[19:0]], cur_write, cur_tag, cur_addr}),
        .resp__valid(resp_valid), .resp__ready(resp_ready),
        .resp__payload({resp_data, resp_write, resp_tag}),
        .backdoor__addr(0), .backdoor__data(64'd0), .backdoor__en(1'b0),
        .image_clear(1'b0), .image_load(image_load), .stats_clear(1'b0),
        .stats(stats)
    );

    initial begin
        if (!$value$plusargs("N=%d", n_req)) n_req = 0;
        if (!$value$plusargs("LIMIT=%d", limit)) limit = 32'h7FFF_FFFF;
        if ($value$plusargs("READY_LEN=%d", ready_len)) use_ready = 1;
        if (n_req > MAXN) begin
            $display("hbm_tb: N=%0d exceeds MAXN=%0d", n_req, MAXN);
            $finish;
        end
        i = ($value$plusargs("ADDR=%s", f_addr));
        i = ($value$plusargs("META=%s", f_meta));
        i = ($value$plusargs("WDATA=%s", f_wdata));
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

    always @(posedge clk) if (running) begin
        if (can_offer && tag_busy[cur_tag]) tag_stalls <= tag_stalls + 1;
        if (req_valid && req_ready) begin
            out_accept[nxt[19:0]] <= t;
            tag_owner[cur_tag] <= nxt;
            tag_busy[cur_tag] <= 1'b1;
            nxt <= nxt + 1;
        end
        if (resp_valid && resp_ready) begin
            out_complete[tag_owner[resp_tag][19:0]] <= t;
            out_data[tag_owner[resp_tag][19:0]] <= resp_data;
            tag_busy[resp_tag] <= 1'b0;
            done <= done + 1;
        end
        outstanding <= outstanding + (req_valid && req_ready) - (resp_valid && resp_ready);
        t <= t + 1;
        if (done + (resp_valid && resp_ready) == n_req || (use_ready && t + 1 >= ready_len)) begin
            running <= 1'b0;
            finished <= 1'b1;
            overflow <= done + (resp_valid && resp_ready) != n_req;
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
