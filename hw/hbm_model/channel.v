// One HBM channel for Verilator builds (simulation only, not synthesisable): the same cycle
// behaviour as hw/hbm_model/hbm.py's Channel (docs/hbm_model.md §2), written as a program: the
// simulator runs loops over the occupied queue entries instead of logic for all of them.
//
// Same ports as the Amaranth Channel (its signature, flattened: lane k's fields at [k*W +: W]).
// Structure: the command decision of a cycle depends only on the state at the start of the
// cycle, so it is computed at the clock edge before it (from the state after that edge) and held
// in registers d_*; at the edge ending cycle t the block applies the decision of t (bank and
// channel timing, queue removal, response FIFO), pops a taken response, appends the accepted
// requests in lane order, then decides cycle t + 1. Outputs are registers except enq_kind (the
// bank state after this cycle's commands, looked up for the incoming requests).
//
// Timing constraints are kept as the first cycle they hold ("t >= X + d": X + d, keeping the
// larger value; wtr_s/wtr_l are overwritten), equal to hbm.py's saturating down-counters (a count
// c at the start of cycle t is max(0, ready - t)) but with no work in cycles without commands;
// an event with d <= 1 changes nothing.
// Per-entry "bank open" / "row hit" are read from the bank state (equal to hbm.py's per-entry flags).
// The refresh tick (every t = k * REFI, k >= 1; after refresh_restart was high in cycle S, every
// t = S + 1 + k * REFI, k >= 0) is counted here rather than taken from refresh_tick (same value;
// it is needed one cycle ahead). Parameters: hbm.py DerivedTiming (unit cycles) and
// the preset; BANKS <= 64.
module ember_hbm_channel #(
    parameter QUEUE_DEPTH = 64,
    parameter BANKS = 16,
    parameter BANKS_PER_GROUP = 4,
    parameter BANK_GROUPS = 4,
    parameter BANK_BITS = 4,
    parameter ROW_BITS = 15,
    parameter TAG_BITS = 12,
    parameter LANES = 1,
    parameter OCC_BITS = 7,
    parameter TIME_BITS = 48,
    parameter RESPONSE_DEPTH = 16,
    parameter CLOSED_PAGE = 0,
    parameter REFRESH = 1,
    parameter REFI = 3900,
    parameter RL = 16, parameter WL = 6,
    parameter RCD = 14, parameter RC = 48, parameter RP = 14, parameter RAS = 34,
    parameter RTP = 4, parameter WTP = 22,
    parameter RRD_S = 4, parameter RRD_L = 6, parameter FAW = 30, parameter RFC = 260,
    parameter CCD_S = 2, parameter CCD_L = 4,
    parameter WTR_S = 8, parameter WTR_L = 10, parameter RTW = 12
) (
    input  wire                          clk,
    input  wire                          rst,
    input  wire [LANES-1:0]              enq,
    input  wire [LANES*BANK_BITS-1:0]    enq_bank,
    input  wire [LANES*ROW_BITS-1:0]     enq_row,
    input  wire [LANES*TAG_BITS-1:0]     enq_tag,
    input  wire [LANES-1:0]              enq_write,
    output reg                           full,
    output reg  [OCC_BITS-1:0]           occupancy,
    output reg  [2*LANES-1:0]            enq_kind,
    input  wire                          refresh_tick,
    input  wire                          refresh_restart,
    input  wire [TIME_BITS-1:0]          now,
    output reg                           resp_valid,
    output reg  [TAG_BITS-1:0]           resp_tag,
    output reg                           resp_write,
    input  wire                          resp_take,
    output reg                           act,
    output reg                           pre,
    output reg                           \ref ,
    output reg                           col
);
    // -- state -----------------------------------------------------------------------------
    // request queue, entry 0 oldest
    reg [BANK_BITS-1:0] q_bank [0:QUEUE_DEPTH-1];
    reg [ROW_BITS-1:0]  q_row  [0:QUEUE_DEPTH-1];
    reg [TAG_BITS-1:0]  q_tag  [0:QUEUE_DEPTH-1];
    reg                 q_write [0:QUEUE_DEPTH-1];
    integer count;
    // banks: open row, and the first cycle an ACT / a PRE / a column command is legal
    reg                 bk_open [0:BANKS-1];
    reg [ROW_BITS-1:0]  bk_row  [0:BANKS-1];
    reg [63:0] act_at [0:BANKS-1];     // tRC, tRP
    reg [63:0] pre_at [0:BANKS-1];     // tRAS, tRTP, tWL + tBURST + tWR
    reg [63:0] col_at [0:BANKS-1];     // tRCD
    reg [63:0] open_mask;
    // channel timing (first legal cycle)
    reg [63:0] rrd_s_at, rfc_at, faw0_at, faw1_at, faw2_at, faw3_at, ccd_s_at, wtr_s_at, wtr_l_at,
               rtw_at;
    reg [63:0] rrd_l_at [0:BANK_GROUPS-1];
    reg [63:0] ccd_l_at [0:BANK_GROUPS-1];
    integer last_wr_group;
    // refresh
    reg pending_reg;
    reg prea_all_reg;                  // a restart's refresh: PREA of every bank before REF
    integer phase;
    // response FIFO (issued column commands: tag, write, completion cycle)
    reg [TAG_BITS-1:0]  f_tag   [0:RESPONSE_DEPTH-1];
    reg                 f_write [0:RESPONSE_DEPTH-1];
    reg [TIME_BITS-1:0] f_due   [0:RESPONSE_DEPTH-1];
    integer f_head, f_level;
    // the decision for the current cycle
    reg        d_act, d_ref, d_col, d_pending, d_prea_all, d_prea_go;
    integer    d_act_bank, d_col_idx;
    reg [ROW_BITS-1:0] d_act_row;
    reg [63:0] d_pre_mask;

    // -- temporaries ----------------------------------------------------------------------------
    integer i, k, b, g, cb, cg, col_idx, row_idx, slot, any_b;
    reg cw, pend, prea, tick, ok, all_ok;
    reg [63:0] bank_hit, x, t;
    reg [TIME_BITS-1:0] next_now;

    localparam [63:0] ALL_BANKS = BANKS >= 64 ? ~64'd0 : (64'd1 << BANKS) - 64'd1;

    function integer group_of(input integer bank);
        group_of = bank / BANKS_PER_GROUP;
    endfunction

    // max(ready, x + d) for an event at x with delay d (d <= 1: no constraint beyond x + 1)
    function [63:0] later(input [63:0] ready, input [63:0] at, input integer d);
        later = (d > 1 && at + d > ready) ? at + d : ready;
    endfunction

    task reset_all;
        begin
            count = 0;
            for (i = 0; i < BANKS; i = i + 1) begin
                bk_open[i] = 1'b0; bk_row[i] = 0;
                act_at[i] = 64'd0; pre_at[i] = 64'd0; col_at[i] = 64'd0;
            end
            for (i = 0; i < QUEUE_DEPTH; i = i + 1) begin
                q_bank[i] = 0; q_row[i] = 0; q_tag[i] = 0; q_write[i] = 1'b0;
            end
            for (i = 0; i < RESPONSE_DEPTH; i = i + 1) begin
                f_tag[i] = 0; f_write[i] = 1'b0; f_due[i] = 0;
            end
            open_mask = 64'd0;
            rrd_s_at = 64'd0; rfc_at = 64'd0; faw0_at = 64'd0; faw1_at = 64'd0; faw2_at = 64'd0;
            faw3_at = 64'd0; ccd_s_at = 64'd0; wtr_s_at = 64'd0; wtr_l_at = 64'd0; rtw_at = 64'd0;
            last_wr_group = 0;
            for (i = 0; i < BANK_GROUPS; i = i + 1) begin rrd_l_at[i] = 64'd0; ccd_l_at[i] = 64'd0; end
            pending_reg = 1'b0; prea_all_reg = 1'b0; phase = 0;
            f_head = 0; f_level = 0;
            d_act = 1'b0; d_ref = 1'b0; d_col = 1'b0; d_pending = 1'b0;
            d_prea_all = 1'b0; d_prea_go = 1'b0;
            d_act_bank = 0; d_col_idx = 0; d_act_row = 0; d_pre_mask = 64'd0;
        end
    endtask

    initial begin
        reset_all;
        full = 1'b0; occupancy = 0; resp_valid = 1'b0; resp_tag = 0; resp_write = 1'b0;
        act = 1'b0; pre = 1'b0; \ref = 1'b0; col = 1'b0;
    end

    always @(posedge clk) begin
        if (rst) begin
            reset_all;
        end else begin
            // ---- apply the decision of this cycle (x) --------------------------------------------
            x = {{(64-TIME_BITS){1'b0}}, now};
            cb = 0; cg = 0; cw = 1'b0;
            if (d_col) begin
                cb = q_bank[d_col_idx]; cg = group_of(cb); cw = q_write[d_col_idx];
                pre_at[cb] = later(pre_at[cb], x, cw ? WTP : RTP);
                ccd_s_at = later(ccd_s_at, x, CCD_S);
                ccd_l_at[cg] = later(ccd_l_at[cg], x, CCD_L);
                if (cw) begin
                    if (WTR_S > 1) wtr_s_at = x + WTR_S;
                    if (WTR_L > 1) wtr_l_at = x + WTR_L;
                    last_wr_group = cg;
                end else
                    rtw_at = later(rtw_at, x, RTW);
            end
            if (d_act) begin
                b = d_act_bank; g = group_of(b);
                act_at[b] = later(act_at[b], x, RC);
                pre_at[b] = later(pre_at[b], x, RAS);
                col_at[b] = later(col_at[b], x, RCD);
                bk_open[b] = 1'b1; bk_row[b] = d_act_row; open_mask[b] = 1'b1;
                rrd_s_at = later(rrd_s_at, x, RRD_S);
                rrd_l_at[g] = later(rrd_l_at[g], x, RRD_L);
                // the last four ACTs: slot 3 is the fourth-last
                faw3_at = faw2_at; faw2_at = faw1_at; faw1_at = faw0_at;
                faw0_at = x + (FAW > 1 ? FAW : 1);
            end
            if (d_pre_mask != 64'd0) begin
                for (b = 0; b < BANKS; b = b + 1)
                    if (d_pre_mask[b]) begin
                        act_at[b] = later(act_at[b], x, RP);
                        bk_open[b] = 1'b0;
                    end
                open_mask = open_mask & ~d_pre_mask;
            end
            if (d_ref) rfc_at = later(rfc_at, x, RFC);
            if (d_ref) pending_reg = 1'b0;
            else if (d_pending) pending_reg = 1'b1;
            prea_all_reg = d_prea_all && !d_prea_go;
            // response FIFO: pop the taken head, push the column command
            if (resp_take && f_level != 0) begin
                f_head = (f_head + 1) % RESPONSE_DEPTH;
                f_level = f_level - 1;
            end
            if (d_col) begin
                slot = (f_head + f_level) % RESPONSE_DEPTH;
                f_tag[slot] = q_tag[d_col_idx];
                f_write[slot] = cw;
                f_due[slot] = now + (cw ? WL : RL);
                f_level = f_level + 1;
            end
            // queue: remove the issued entry (younger ones move down), append accepted requests
            if (d_col) begin
                for (i = d_col_idx; i < count - 1; i = i + 1) begin
                    q_bank[i] = q_bank[i + 1]; q_row[i] = q_row[i + 1];
                    q_tag[i] = q_tag[i + 1]; q_write[i] = q_write[i + 1];
                end
                count = count - 1;
            end
            for (k = 0; k < LANES; k = k + 1) begin
                if (enq[k] && count < QUEUE_DEPTH) begin
                    q_bank[count] = enq_bank[k*BANK_BITS +: BANK_BITS];
                    q_row[count] = enq_row[k*ROW_BITS +: ROW_BITS];
                    q_tag[count] = enq_tag[k*TAG_BITS +: TAG_BITS];
                    q_write[count] = enq_write[k];
                    count = count + 1;
                end
            end

            // ---- decide the next cycle (t) from the state just computed --------------------------
            t = x + 64'd1;
            phase = (refresh_restart || phase == REFI - 1) ? 0 : phase + 1;
            tick = phase == 0;
            pend = REFRESH != 0 && (pending_reg || tick);
            prea = REFRESH != 0 && (prea_all_reg || refresh_restart);
            d_act = 1'b0; d_ref = 1'b0; d_col = 1'b0; d_pre_mask = 64'd0; d_pending = pend;
            d_prea_all = prea; d_prea_go = 1'b0;
            bank_hit = 64'd0;
            if (count != 0 || (pend && REFRESH != 0) || (CLOSED_PAGE != 0 && open_mask != 0)) begin
                // scan 1: banks with a queued row hit; the oldest column candidate
                col_idx = -1;
                for (i = 0; i < count; i = i + 1) begin
                    b = q_bank[i];
                    if (bk_open[b] && bk_row[b] == q_row[i]) begin
                        bank_hit[b] = 1'b1;
                        if (col_idx < 0 && col_at[b] <= t && ccd_s_at <= t) begin
                            g = group_of(b);
                            ok = ccd_l_at[g] <= t;
                            if (q_write[i]) ok = ok && rtw_at <= t;
                            else ok = ok && (last_wr_group == g ? wtr_l_at <= t : wtr_s_at <= t);
                            if (ok) col_idx = i;
                        end
                    end
                end
                d_col = col_idx >= 0 && !pend && f_level != RESPONSE_DEPTH;
                d_col_idx = col_idx < 0 ? 0 : col_idx;
                if (pend) begin
                    all_ok = 1'b1;
                    if (open_mask != 64'd0 || prea) begin
                        // PREA of the open banks; after a restart, of every bank
                        for (b = 0; b < BANKS; b = b + 1)
                            if (bk_open[b] && pre_at[b] > t) all_ok = 1'b0;
                        if (all_ok) begin
                            d_pre_mask = prea ? ALL_BANKS : open_mask;
                            d_prea_go = 1'b1;
                        end
                    end else begin
                        for (b = 0; b < BANKS; b = b + 1)
                            if (act_at[b] > t) all_ok = 1'b0;
                        d_ref = all_ok;
                    end
                end else begin
                    // scan 2: the oldest request needing an ACT (bank closed) or a PRE (another
                    // row open, no queued hit on the bank)
                    row_idx = -1;
                    for (i = 0; i < count && row_idx < 0; i = i + 1) begin
                        b = q_bank[i];
                        if (bk_open[b]) begin
                            if (bk_row[b] != q_row[i] && !bank_hit[b] && pre_at[b] <= t)
                                row_idx = i;
                        end else if (act_at[b] <= t && rrd_s_at <= t && rfc_at <= t
                                     && faw3_at <= t && rrd_l_at[group_of(b)] <= t)
                            row_idx = i;
                    end
                    if (row_idx >= 0) begin
                        b = q_bank[row_idx];
                        if (bk_open[b]) d_pre_mask[b] = 1'b1;
                        else begin
                            d_act = 1'b1; d_act_bank = b; d_act_row = q_row[row_idx];
                        end
                    end else if (CLOSED_PAGE != 0 && open_mask != 64'd0) begin
                        // closed page: precharge the lowest open bank no queued request hits
                        any_b = -1;
                        for (b = 0; b < BANKS && any_b < 0; b = b + 1)
                            if (bk_open[b] && !bank_hit[b] && pre_at[b] <= t) any_b = b;
                        if (any_b >= 0) d_pre_mask[any_b] = 1'b1;
                    end
                end
            end
        end
        // ---- outputs: the state and decision of the next cycle -------------------------------------
        next_now = now + 1;
        occupancy <= count[OCC_BITS-1:0];
        full <= count == QUEUE_DEPTH;
        resp_valid <= f_level != 0 && f_due[f_head] <= next_now;
        resp_tag <= f_tag[f_head];
        resp_write <= f_write[f_head];
        act <= d_act;
        pre <= d_pre_mask != 64'd0;
        \ref <= d_ref;
        col <= d_col;
    end

    // The incoming requests' class against the bank state after this cycle's commands (their
    // first cycle as candidates): 0 row hit, 1 miss (closed), 2 conflict (another row open).
    reg kind_open, kind_hit;
    integer kb, lane;
    always @* begin
        for (lane = 0; lane < LANES; lane = lane + 1) begin
            kb = enq_bank[lane*BANK_BITS +: BANK_BITS];
            kind_open = kb < BANKS ? bk_open[kb] : 1'b0;
            kind_hit = kind_open && bk_row[kb] == enq_row[lane*ROW_BITS +: ROW_BITS];
            if (d_act && d_act_bank == kb) begin
                kind_open = 1'b1;
                kind_hit = d_act_row == enq_row[lane*ROW_BITS +: ROW_BITS];
            end else if (d_pre_mask[kb]) begin
                kind_open = 1'b0;
                kind_hit = 1'b0;
            end
            enq_kind[2*lane +: 2] = kind_hit ? 2'd0 : (kind_open ? 2'd2 : 2'd1);
        end
    end
endmodule
