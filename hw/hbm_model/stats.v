// Statistics counters of the memory models for Verilator builds (simulation only): the same
// counters as hw/hbm_model/blocks.py's Statistics (docs/hbm_model.md §5, blocks.stat_names order),
// kept directly in the output vector `stats` (counter i at [64*i +: 64]) so that no cycle has to
// concatenate ~100 counters into it. Same ports as Statistics (flattened: port k's field at
// [k*W +: W], channel c's occupancy at [c*OCC_BITS +: OCC_BITS]).
module ember_hbm_stats #(
    parameter CHANNELS = 8,
    parameter PORTS = 1,
    parameter OCC_BITS = 7,
    parameter COUNT_BITS = 4,
    parameter ACCESS_BYTES = 64,
    parameter BURST = 2,
    parameter HIST_BINS = 64,
    parameter HIST_SHIFT = 2,
    parameter TIME_BITS = 48,
    parameter NSTATS = 14 + 64 + 3 * 8
) (
    input  wire                          clk,
    input  wire                          rst,
    input  wire                          clear,
    input  wire [PORTS-1:0]              accept,
    input  wire [PORTS-1:0]              accept_write,
    input  wire [PORTS-1:0]              classify,
    input  wire [2*PORTS-1:0]            classify_kind,
    input  wire [COUNT_BITS-1:0]         activates,
    input  wire [COUNT_BITS-1:0]         precharges,
    input  wire [COUNT_BITS-1:0]         refreshes,
    input  wire [PORTS-1:0]              deliver,
    input  wire [PORTS-1:0]              deliver_write,
    input  wire [TIME_BITS*PORTS-1:0]    deliver_latency,
    input  wire [CHANNELS-1:0]           column,
    input  wire [OCC_BITS*CHANNELS-1:0]  occupancy,
    output reg  [64*NSTATS-1:0]          stats
);
    localparam CYCLES = 0, READS = 1, WRITES = 2, BYTES_READ = 3, BYTES_WRITTEN = 4,
               ROW_HITS = 5, ACTIVATES = 8, PRECHARGES = 9, REFRESHES = 10, LAT_SUM = 11,
               LAT_MIN = 12, LAT_MAX = 13, HIST = 14, BUSY = HIST + HIST_BINS,
               OCC_SUM = BUSY + CHANNELS, OCC_MAX = OCC_SUM + CHANNELS;

    integer port_bin [0:PORTS-1];
    reg port_done [0:PORTS-1];
    reg first_in_bin;
    integer k, c, n_rd, n_wr, n_rd_done, n_wr_done, n_kind0, n_kind1, n_kind2;
    reg [63:0] lat, lo, hi, sum, occ;
    reg done;

    task restart;
        begin
            stats <= 0;
            stats[64*LAT_MIN +: 64] <= {64{1'b1}};
        end
    endtask

    initial begin
        stats = 0;
        stats[64*LAT_MIN +: 64] = {64{1'b1}};
    end

    always @(posedge clk) begin
        if (rst || clear) begin
            restart;
        end else begin
            n_rd = 0; n_wr = 0; n_rd_done = 0; n_wr_done = 0;
            n_kind0 = 0; n_kind1 = 0; n_kind2 = 0;
            sum = 64'd0;
            lo = stats[64*LAT_MIN +: 64];
            hi = stats[64*LAT_MAX +: 64];
            stats[64*CYCLES +: 64] <= stats[64*CYCLES +: 64] + 64'd1;
            for (k = 0; k < PORTS; k = k + 1) begin
                if (accept[k]) begin
                    if (accept_write[k]) n_wr = n_wr + 1; else n_rd = n_rd + 1;
                end
                if (classify[k]) begin
                    case (classify_kind[2*k +: 2])
                        2'd0: n_kind0 = n_kind0 + 1;
                        2'd1: n_kind1 = n_kind1 + 1;
                        2'd2: n_kind2 = n_kind2 + 1;
                        default: ;
                    endcase
                end
                if (deliver[k] && deliver_write[k]) n_wr_done = n_wr_done + 1;
                done = deliver[k] && !deliver_write[k];
                if (done) begin
                    n_rd_done = n_rd_done + 1;
                    lat = {{(64-TIME_BITS){1'b0}}, deliver_latency[TIME_BITS*k +: TIME_BITS]};
                    sum = sum + lat;
                    if (lat < lo) lo = lat;
                    if (lat > hi) hi = lat;
                end
            end
            if (n_rd != 0) stats[64*READS +: 64] <= stats[64*READS +: 64] + n_rd;
            if (n_wr != 0) stats[64*WRITES +: 64] <= stats[64*WRITES +: 64] + n_wr;
            if (n_rd_done != 0)
                stats[64*BYTES_READ +: 64] <= stats[64*BYTES_READ +: 64] + n_rd_done * ACCESS_BYTES;
            if (n_wr_done != 0)
                stats[64*BYTES_WRITTEN +: 64] <= stats[64*BYTES_WRITTEN +: 64]
                                                 + n_wr_done * ACCESS_BYTES;
            if (n_kind0 != 0) stats[64*ROW_HITS +: 64] <= stats[64*ROW_HITS +: 64] + n_kind0;
            if (n_kind1 != 0)
                stats[64*(ROW_HITS+1) +: 64] <= stats[64*(ROW_HITS+1) +: 64] + n_kind1;
            if (n_kind2 != 0)
                stats[64*(ROW_HITS+2) +: 64] <= stats[64*(ROW_HITS+2) +: 64] + n_kind2;
            if (activates != 0)
                stats[64*ACTIVATES +: 64] <= stats[64*ACTIVATES +: 64] + activates;
            if (precharges != 0)
                stats[64*PRECHARGES +: 64] <= stats[64*PRECHARGES +: 64] + precharges;
            if (refreshes != 0)
                stats[64*REFRESHES +: 64] <= stats[64*REFRESHES +: 64] + refreshes;
            if (n_rd_done != 0) begin
                stats[64*LAT_SUM +: 64] <= stats[64*LAT_SUM +: 64] + sum;
                stats[64*LAT_MIN +: 64] <= lo;
                stats[64*LAT_MAX +: 64] <= hi;
                // histogram: the first port of each bin adds the reads of all ports in it
                for (k = 0; k < PORTS; k = k + 1) begin
                    lat = {{(64-TIME_BITS){1'b0}}, deliver_latency[TIME_BITS*k +: TIME_BITS]};
                    port_done[k] = deliver[k] && !deliver_write[k];
                    port_bin[k] = lat >= HIST_BINS * (1 << HIST_SHIFT) ? HIST_BINS - 1
                                                                      : lat >> HIST_SHIFT;
                end
                for (k = 0; k < PORTS; k = k + 1) begin
                    first_in_bin = port_done[k];
                    for (c = 0; c < k; c = c + 1)
                        if (port_done[c] && port_bin[c] == port_bin[k]) first_in_bin = 1'b0;
                    if (first_in_bin) begin
                        n_rd = 0;
                        for (c = k; c < PORTS; c = c + 1)
                            if (port_done[c] && port_bin[c] == port_bin[k]) n_rd = n_rd + 1;
                        stats[64*(HIST+port_bin[k]) +: 64] <= stats[64*(HIST+port_bin[k]) +: 64]
                                                              + n_rd;
                    end
                end
            end
            for (c = 0; c < CHANNELS; c = c + 1) begin
                occ = {{(64-OCC_BITS){1'b0}}, occupancy[OCC_BITS*c +: OCC_BITS]};
                if (column[c]) stats[64*(BUSY+c) +: 64] <= stats[64*(BUSY+c) +: 64] + BURST;
                if (occ != 0) begin
                    stats[64*(OCC_SUM+c) +: 64] <= stats[64*(OCC_SUM+c) +: 64] + occ;
                    if (occ > stats[64*(OCC_MAX+c) +: 64]) stats[64*(OCC_MAX+c) +: 64] <= occ;
                end
            end
        end
    end
endmodule
