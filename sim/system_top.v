// Testbench wrapper of the system top for Verilator + cocotb (simulation only, needs --timing).
//
// cocotb 1.9 toggles a clock from Python, twice per cycle; here the clock, the output-queue
// sinks (with seeded pseudo-random back-pressure) and token capture are in Verilog, so Python
// is idle while the unit runs and only wakes when the run is finished or a capture buffer is
// full:
//   capture       1: the sinks pop tokens (ready per cycle: lfsr[15:0] >= bp_threshold)
//   bp_threshold  0 = always ready; round(p * 65536) for a not-ready probability p
//   seed/seed_load  reseed both LFSRs (xorshift32) at the next edge
//   finished      set once DONE is visible and both queues have stayed empty for 4 cycles
//   cap_full      a capture buffer cannot take another beat/token (sinks stall until `dump`)
// The data output carries beats of DATA_TOKENS 64-bit tokens (TmuConfig.output_tokens): the
// payload is tokens[0..DATA_TOKENS) then the count of valid ones; they are captured in order.
//   dump          pulse: $writememh the captured tokens to +TOKEN_DATA= / +TOKEN_CTRL= files
//                 and empty the buffers
// Everything else (register port, memory back door, image load) is driven by the testbench.
`timescale 1ns/1ps
module ember_tb_top #(
    parameter ABITS    = 16,
    parameter DATA_TOKENS = 1,
    parameter DATA_CAP = 1 << 20,
    parameter CTRL_CAP = 1 << 18
) ();
    reg clk /*verilator public_flat_rw*/ = 1'b0;
    always #1 clk = ~clk;

    reg              rst /*verilator public_flat_rw*/ = 1'b1;
    reg  [11:0]      csr_addr /*verilator public_flat_rw*/ = 0;
    reg              csr_w_en /*verilator public_flat_rw*/ = 0;
    reg  [31:0]      csr_w_data /*verilator public_flat_rw*/ = 0;
    reg              csr_r_en /*verilator public_flat_rw*/ = 0;
    wire [31:0]      csr_r_data /*verilator public_flat_rw*/;
    reg  [ABITS-1:0] bd_addr /*verilator public_flat_rw*/ = 0;
    reg  [63:0]      bd_data /*verilator public_flat_rw*/ = 0;
    reg              bd_en /*verilator public_flat_rw*/ = 0;
    reg              image_clear /*verilator public_flat_rw*/ = 0;
    reg              image_load /*verilator public_flat_rw*/ = 0;

    reg              capture /*verilator public_flat_rw*/ = 0;
    reg  [16:0]      bp_threshold /*verilator public_flat_rw*/ = 0;
    reg  [31:0]      seed /*verilator public_flat_rw*/ = 1;
    reg              seed_load /*verilator public_flat_rw*/ = 0;
    reg              dump /*verilator public_flat_rw*/ = 0;
    reg  [31:0]      data_n = 0;
    reg  [31:0]      ctrl_n = 0;
    reg              cap_full /*verilator public_flat_rw*/ = 0;
    reg              finished /*verilator public_flat_rw*/ = 0;
    reg  [2:0]       quiet = 0;

    wire             data_valid, ctrl_valid;
    wire             busy /*verilator public_flat_rw*/;
    wire             done /*verilator public_flat_rw*/;
    localparam COUNT_BITS = $clog2(DATA_TOKENS + 1);
    wire [64*DATA_TOKENS+COUNT_BITS-1:0] data_payload;
    wire [COUNT_BITS-1:0] data_count = data_payload[64*DATA_TOKENS +: COUNT_BITS];
    wire [31:0]      data_taken = (data_valid && data_ready) ? {{(32-COUNT_BITS){1'b0}}, data_count} : 32'd0;
    integer          t;
    wire [15:0]      ctrl_payload;

    reg  [63:0]      data_cap [0:DATA_CAP-1];
    reg  [15:0]      ctrl_cap [0:CTRL_CAP-1];
    reg  [8*1024-1:0] data_file;
    reg  [8*1024-1:0] ctrl_file;
    initial begin
        if (!$value$plusargs("TOKEN_DATA=%s", data_file)) data_file = "tokens_data.hex";
        if (!$value$plusargs("TOKEN_CTRL=%s", ctrl_file)) ctrl_file = "tokens_ctrl.hex";
    end

    function [31:0] xorshift32(input [31:0] x);
        reg [31:0] y;
        begin
            y = x ^ (x << 13);
            y = y ^ (y >> 17);
            xorshift32 = y ^ (y << 5);
        end
    endfunction

    reg  [31:0] lfsr_d = 32'h1234_5679;
    reg  [31:0] lfsr_c = 32'h9E37_79B9;
    wire sink_on    = capture && !cap_full && !dump;
    wire data_ready = sink_on && ({1'b0, lfsr_d[15:0]} >= bp_threshold);
    wire ctrl_ready = sink_on && ({1'b0, lfsr_c[15:0]} >= bp_threshold);

    always @(posedge clk) begin
        if (seed_load) begin
            lfsr_d <= seed | 32'd1;
            lfsr_c <= (seed ^ 32'h9E37_79B9) | 32'd1;
        end else begin
            lfsr_d <= xorshift32(lfsr_d);
            lfsr_c <= xorshift32(lfsr_c);
        end
        if (data_valid && data_ready) begin
            for (t = 0; t < DATA_TOKENS; t = t + 1)
                if (t < data_count)
                    data_cap[(data_n + t) & (DATA_CAP - 1)] <= data_payload[64*t +: 64];
            data_n <= data_n + data_taken;
        end
        if (ctrl_valid && ctrl_ready) begin
            ctrl_cap[ctrl_n[$clog2(CTRL_CAP)-1:0]] <= ctrl_payload;
            ctrl_n <= ctrl_n + 1;
        end
        cap_full <= (data_n + data_taken + DATA_TOKENS > DATA_CAP)
                 || (ctrl_n + (ctrl_valid && ctrl_ready) >= CTRL_CAP);
        if (dump) begin
            if (data_n != 0) $writememh(data_file, data_cap, 0, data_n - 1);
            if (ctrl_n != 0) $writememh(ctrl_file, ctrl_cap, 0, ctrl_n - 1);
            data_n <= 0;
            ctrl_n <= 0;
            cap_full <= 0;
        end
        if (!capture || busy || !done || data_valid || ctrl_valid) begin
            quiet <= 0;
            finished <= 0;
        end else if (quiet != 3'd7) begin
            quiet <= quiet + 1;
            finished <= quiet >= 3'd3;
        end
    end

    ember_system dut (
        .clk(clk), .rst(rst),
        .csr__addr(csr_addr), .csr__w_en(csr_w_en), .csr__w_data(csr_w_data),
        .csr__r_en(csr_r_en), .csr__r_data(csr_r_data),
        .backdoor__addr(bd_addr), .backdoor__data(bd_data), .backdoor__en(bd_en),
        .image_clear(image_clear), .image_load(image_load),
        .data_out__valid(data_valid), .data_out__ready(data_ready), .data_out__payload(data_payload),
        .ctrl_out__valid(ctrl_valid), .ctrl_out__ready(ctrl_ready), .ctrl_out__payload(ctrl_payload),
        .busy(busy), .done(done)
    );
endmodule
