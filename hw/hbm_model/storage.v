// Storage array of the memory model for Verilator builds (simulation only, not synthesisable).
//
// Amaranth would emit one initialiser line per word for an amaranth.lib.memory.Memory, which
// makes multi-megabyte arrays impractical to generate; this module holds the same array with a
// synchronous read port and a write port with byte enables (wr_strb), plus a fast image load for testbenches:
//   image_clear: zero the whole array at this clock edge;
//   image_load:  $readmemh the file named by the plusarg +HBM_IMAGE=<path> at this clock edge
//                (one 64-bit hex word per line, word 0 first).
module ember_hbm_storage #(
    parameter WORDS = 1024,
    parameter ABITS = 10
) (
    input  wire             clk,
    input  wire             rd_en,
    input  wire [ABITS-1:0] rd_addr,
    output reg  [63:0]      rd_data,
    input  wire             wr_en,
    input  wire [ABITS-1:0] wr_addr,
    input  wire [63:0]      wr_data,
    input  wire [7:0]       wr_strb,
    input  wire             image_clear,
    input  wire             image_load
);
    reg [63:0] mem [0:WORDS-1];
    reg [8*1024-1:0] image_file;
    integer i;
    integer k;

    initial begin
        rd_data = 64'd0;
        for (i = 0; i < WORDS; i = i + 1) mem[i] = 64'd0;
        if (!$value$plusargs("HBM_IMAGE=%s", image_file)) image_file = "hbm_image.hex";
    end

    always @(posedge clk) begin
        if (rd_en) rd_data <= mem[rd_addr];
        if (image_clear) for (i = 0; i < WORDS; i = i + 1) mem[i] = 64'd0;
        if (image_load) $readmemh(image_file, mem);
        if (wr_en)
            for (k = 0; k < 8; k = k + 1)
                if (wr_strb[k]) mem[wr_addr][8*k +: 8] = wr_data[8*k +: 8];
    end
endmodule
