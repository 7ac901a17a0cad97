// Storage array of the memory model for Verilator builds (simulation only, not synthesisable).
//
// Amaranth would emit one initialiser line per word for an amaranth.lib.memory.Memory, which
// makes multi-megabyte arrays impractical to generate; this module holds the same array of 64-bit
// words with PORTS synchronous read ports and PORTS write ports (byte enables wr_strb) of
// LINE_WORDS words each (an aligned line; addresses are line addresses), accessed in port order
// within a clock edge (a read on port k sees the writes of ports j < k at the same edge, not those
// of later ports; docs/hbm_model.md §4), plus a fast image load for testbenches:
//   image_clear: zero the whole array at this clock edge;
//   image_load:  $readmemh the file named by the plusarg +HBM_IMAGE=<path> at this clock edge
//                (one 64-bit hex word per line, word 0 first).
// WORDS must be a multiple of LINE_WORDS. Port k's fields are bits [k*W +: W] of each vector.
module ember_hbm_storage #(
    parameter WORDS = 1024,
    parameter ABITS = 10,
    parameter PORTS = 1,
    parameter LINE_WORDS = 1
) (
    input  wire                           clk,
    input  wire [PORTS-1:0]               rd_en,
    input  wire [PORTS*ABITS-1:0]         rd_addr,
    output reg  [PORTS*64*LINE_WORDS-1:0] rd_data,
    input  wire [PORTS-1:0]               wr_en,
    input  wire [PORTS*ABITS-1:0]         wr_addr,
    input  wire [PORTS*64*LINE_WORDS-1:0] wr_data,
    input  wire [PORTS*8*LINE_WORDS-1:0]  wr_strb,
    input  wire                           image_clear,
    input  wire                           image_load
);
    reg [63:0] mem [0:WORDS-1];
    reg [8*1024-1:0] image_file;
    integer i;
    integer k;
    integer p;
    integer w;
    integer base;

    initial begin
        rd_data = 0;
        for (i = 0; i < WORDS; i = i + 1) mem[i] = 64'd0;
        if (!$value$plusargs("HBM_IMAGE=%s", image_file)) image_file = "hbm_image.hex";
    end

    always @(posedge clk) begin
        if (image_clear) for (i = 0; i < WORDS; i = i + 1) mem[i] = 64'd0;
        if (image_load) $readmemh(image_file, mem);
        for (p = 0; p < PORTS; p = p + 1) begin
            if (wr_en[p]) begin
                base = wr_addr[p*ABITS +: ABITS] * LINE_WORDS;
                for (w = 0; w < LINE_WORDS; w = w + 1)
                    for (k = 0; k < 8; k = k + 1)
                        if (wr_strb[p*8*LINE_WORDS + 8*w + k])
                            mem[base + w][8*k +: 8] = wr_data[p*64*LINE_WORDS + 64*w + 8*k +: 8];
            end
            if (rd_en[p]) begin
                base = rd_addr[p*ABITS +: ABITS] * LINE_WORDS;
                for (w = 0; w < LINE_WORDS; w = w + 1)
                    rd_data[p*64*LINE_WORDS + 64*w +: 64] <= mem[base + w];
            end
        end
    end
endmodule
