// The execute side as a consumer of one unit's output queues (CoreModel; sim/harness.cpp).
#pragma once

#include "config.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

constexpr uint64_t NOT_YET = ~uint64_t(0);   // CoreModel::taken_at: operands not all taken yet

// The execute side as a consumer of the output queues (a job with a core schedule; docs/
// performance.md "The coupled core model"; sw.runtime.execute.CoreCostModel is the same rate
// model without waiting). Per control token the core pops it (ready on ctrl), is busy
// cycles_per_control cycles (the pop cycle included), then takes that callback's operands from
// its operand buffer at tokens_per_cycle per cycle (waiting when the buffer is empty); the buffer
// (buffer_tokens) accepts a data beat (ready on data) when a whole beat fits after this cycle's
// take. schedule[i] is the number of operands the callback of control token i pops (DONE last,
// with 0). Two calls per cycle: ready() before the clock edge, commit() after it with what fired.
// With a pace (a replayed execute side, sw.runtime.execute.CoreReplay; cycles_per_control is then
// unused) the core is a front and a back. The front pops control tokens and takes operands in
// queue order: tokens_per_cycle operands per cycle, shared by the callback finishing and the one
// whose control token pops in that cycle (it pops in the cycle the last operands are taken), a
// control token only when its callback's instructions fit in the window beside those of the
// callbacks popped and not completed (or the window is empty). The back completes callbacks in
// order, callback i pace[i] cycles after callback i - 1 (callback 0 after its own pop) and not
// before its operands are all taken. The core is done (finish_cycle) when DONE has popped and
// every callback has completed. Both modes: at most one control token per cycle.
// If the stream and the schedule disagree (more or fewer tokens, DONE elsewhere, or no token
// moving for long while the core waits) the model gives up: `mismatch`, and from then on both
// queues are always ready (a free-running sink), so a wrong schedule never deadlocks the run.
struct CoreModel {
    static const uint64_t STUCK_LIMIT = 1u << 14;   // waiting cycles, the unit refused on the other queue
    static const uint64_t DRAINED_LIMIT = 4;        // waiting cycles for an empty queue of a done unit
    bool active = false;
    uint32_t cycles_per_control = 6, tokens_per_cycle = 8, buffer_tokens = 2 * DATA_TOKENS;
    std::vector<uint32_t> schedule;
    std::vector<uint32_t> pace;  // empty: the flat rate (cycles_per_control); else one per control token
    std::vector<uint32_t> instructions;  // replay: per control token
    uint64_t window = 512;               // replay: instructions popped and not completed, at most
    // state
    size_t next = 0;            // index of the next control token in the schedule
    uint32_t busy = 0;          // cycles of the current control token's dispatch + body left
    uint32_t need = 0;          // operands the current callback still has to take
    uint64_t buffered = 0;      // tokens in the operand buffer
    uint32_t take = 0;          // operands taken in this cycle (set by ready())
    uint32_t take_next = 0;     // replay: the next callback's, if its control token pops now
    bool ctrl_open = false;     // replay: the next control token may pop in this cycle
    size_t completed = 0;       // replay: callbacks completed (the back)
    uint64_t occupied = 0;      // replay: instructions of the callbacks popped and not completed
    uint64_t last_completion = 0;         // replay: cycle of the last completion (or first pop)
    std::vector<uint64_t> taken_at;       // replay: cycle a callback's operands were all taken
    bool done_popped = false;   // replay: DONE popped, callbacks may still be completing
    bool finished = false, mismatch = false;
    uint64_t cycle = 0, first_cycle = 0, finish_cycle = 0, starved = 0, stuck = 0, drained = 0;

    void start() {   // before the START write
        next = 0;
        busy = need = take = take_next = 0;
        ctrl_open = done_popped = false;
        completed = 0;
        occupied = last_completion = 0;
        taken_at.assign(schedule.empty() ? 0 : schedule.size() - 1, NOT_YET);
        buffered = cycle = first_cycle = finish_cycle = starved = stuck = drained = 0;
        finished = mismatch = false;
    }
    bool replay() const { return !pace.empty(); }
    bool free_running() const { return !active || finished || mismatch; }
    // Still consuming: the run is not over before this is false.
    bool holding() const { return !free_running(); }
    bool waiting_for_ctrl() const { return busy == 0 && need == 0; }

    // Before the edge: the ready bits of (data, ctrl) for this cycle.
    void ready(bool& data_ready, bool& ctrl_ready) {
        take = 0;
        if (free_running()) {
            data_ready = ctrl_ready = true;
            return;
        }
        if (busy == 0 && need > 0)
            take = uint32_t(std::min<uint64_t>({tokens_per_cycle, need, buffered}));
        if (replay()) {
            bool room = next < instructions.size() &&
                        (occupied == 0 || occupied + instructions[next] <= window);
            ctrl_open = need == take && !done_popped && room;
            take_next = 0;
            if (ctrl_open && next < schedule.size())
                take_next = uint32_t(std::min<uint64_t>(
                    {uint64_t(schedule[next]), buffered - take, uint64_t(tokens_per_cycle - take)}));
            ctrl_ready = ctrl_open;
        } else {
            ctrl_ready = waiting_for_ctrl();
        }
        data_ready = buffer_tokens - (buffered - take) >= DATA_TOKENS;
    }

    // After the edge: what fired (a data beat of `count` tokens, control token `token`), the
    // valid bits of both queues, whether `ready` was refused on one of them, and whether the
    // unit is done (every token it will push is in the queues: docs/rtl.md §2.6).
    void commit(bool data_fire, unsigned count, bool ctrl_fire, uint16_t token, bool data_valid,
                bool ctrl_valid, bool refused, bool unit_done) {
        if (!active) return;
        if (free_running()) {
            if (finished && !mismatch && (data_fire || ctrl_fire)) mismatch = true;   // tokens after DONE
            return;
        }
        cycle += 1;
        bool want_data = busy == 0 && need > 0 && take == 0;
        bool want_ctrl = replay() ? ctrl_open && !ctrl_fire : busy == 0 && need == 0 && !ctrl_fire;
        // starved: the core had fewer tokens than it could consume in this cycle
        bool short_take = busy == 0 && need > 0 && take < std::min(tokens_per_cycle, need);
        if (short_take || want_ctrl) starved += 1;
        // nothing more can come: the unit is done and the queue the core waits for is empty
        bool hopeless = unit_done && ((want_data && !data_valid) || (want_ctrl && !ctrl_valid));
        bool idle = (want_data || want_ctrl) && !data_fire;
        stuck = idle ? stuck + 1 : 0;
        drained = hopeless ? drained + 1 : 0;
        buffered -= take;
        need -= take;
        const uint64_t now = cycle - 1;   // this cycle, counted from 0
        if (replay() && need == 0 && next > 0 && next - 1 < taken_at.size() &&
            taken_at[next - 1] == NOT_YET)
            taken_at[next - 1] = now;
        if (busy > 0) busy -= 1;
        if (data_fire) buffered += count;
        if (ctrl_fire) {
            if (next == 0) first_cycle = cycle;
            bool done_token = token == 0xFFFF;
            bool last = next + 1 == schedule.size();
            if (next >= schedule.size() || done_token != last) {
                mismatch = true;
            } else if (done_token) {
                if (replay()) {
                    done_popped = true;    // finished once every callback has completed
                } else {
                    finished = true;
                    finish_cycle = cycle;
                }
                if (buffered > 0) mismatch = true;   // operands nobody popped
            } else if (replay()) {
                // its first operands were taken in the cycle of the pop
                need = schedule[next] - take_next;
                buffered -= take_next;
                occupied += instructions[next];
                if (next == 0) last_completion = now;
                if (need == 0) taken_at[next] = now;
            } else {
                busy = cycles_per_control - 1;
                need = schedule[next];
            }
            next += 1;
        }
        if (replay() && !mismatch) {
            // the back: callbacks complete in order, at their pace, after their operands
            size_t popped = std::min(next, taken_at.size());
            while (completed < popped && taken_at[completed] != NOT_YET &&
                   now >= std::max(last_completion + pace[completed], taken_at[completed])) {
                last_completion = now;
                occupied -= instructions[completed];
                completed += 1;
            }
            if (done_popped && completed == taken_at.size()) {
                finished = true;
                finish_cycle = cycle;
            }
        }
        if (drained >= DRAINED_LIMIT || (refused && stuck >= STUCK_LIMIT)) mismatch = true;
    }
};

}  // namespace
