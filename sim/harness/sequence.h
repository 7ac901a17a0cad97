// A job in which a unit runs a sequence of programs (run_sequence; see the header of
// sim/harness.cpp).
#pragma once

#include "config.h"
#include "dut.h"
#include "job_io.h"
#include "runs.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <fstream>
#include <string>
#include <vector>

namespace {

// A job in which some unit runs a sequence of programs (see the header). Units with no program
// stay idle. Per unit, a queue of register accesses on its own port (one per cycle, all units'
// in the same cycle): after a run has finished, read STATUS, FAULT_ADDR and the counters, then
// (if a program is left) write the next program's registers and START. The memory's statistics
// restart with the common START of the first programs only (Harness::start_pulse_cycle; the
// later STARTs do not clear them in hw.multi_system.MultiSystem) and are read once at the end,
// after every unit's last run and the queues' drain (from unit 0's port), and reported with
// every run: they cover the whole job. (A single-unit hw.system.System, not MULTI_TOP, restarts
// them with every START: there they cover the last run only.)
bool run_sequence(Harness& h, const Csr& csr, size_t ncounters, const Job& job, size_t n,
                  const std::string& dir, std::ofstream& out) {
    struct Seq {
        size_t started = 0;          // programs started
        bool running = false;        // the last started program has not been seen finished
        bool seen_busy = false;      // `finished` has dropped since its START
        std::deque<CsrOp> ops;
        bool op_is_start = false;
        std::vector<uint64_t> reads;
        std::vector<RunRecord> runs;
    };
    Seq seq[UNITS];
    bool active[UNITS];
    for (int u = 0; u < UNITS; u++) {
        active[u] = !job.unit[u].empty();
        if (!active[u]) continue;
        for (const CsrOp& op : setup_ops(csr, job.unit[u][0])) h.write(u, op.addr, op.value);
        arm_unit(h.units[u], job.unit[u][0]);
    }
    const uint64_t t0 = h.cycles;     // the common START write's cycle
    h.write_all(csr.ctrl, 1, active);
    for (int u = 0; u < UNITS; u++) {
        h.units[u].seed_load = false;
        if (active[u]) {
            seq[u].started = 1;
            seq[u].running = true;
            seq[u].runs.emplace_back();
        }
    }
    h.core_clock = true;
    h.start_pulse_cycle(true);        // the memory's statistics restart, here only: they cover the job
    for (Unit& unit : h.units) {
        unit.capture = true;
        unit.data.clear();
        unit.ctrl.clear();
    }
    auto wall0 = std::chrono::steady_clock::now();
    const size_t nreads = 3 + 2 * ncounters;   // STATUS, FAULT_ADDR (2), counters (2 each)
    bool timeout = false;
    for (;;) {
        bool all_done = true;
        for (int u = 0; u < UNITS; u++) {
            Seq& q = seq[u];
            Unit& hu = h.units[u];
            if (q.running && !hu.finished) q.seen_busy = true;
            if (q.running && q.seen_busy && hu.finished) {   // a run is over: collect it
                q.running = q.seen_busy = false;
                RunRecord& r = q.runs.back();
                r.data = std::move(hu.data);
                r.ctrl = std::move(hu.ctrl);
                hu.data.clear();
                hu.ctrl.clear();
                r.core = hu.core;
                hu.core.active = false;
                q.ops.push_back({false, csr.status, 0});
                q.ops.push_back({false, csr.fault_addr_lo, 0});
                q.ops.push_back({false, csr.fault_addr_lo + 4, 0});
                for (size_t i = 0; i < ncounters; i++) {
                    q.ops.push_back({false, uint32_t(csr.counters + 8 * i), 0});
                    q.ops.push_back({false, uint32_t(csr.counters + 8 * i + 4), 0});
                }
                if (q.started < job.unit[u].size()) {
                    for (const CsrOp& op : setup_ops(csr, job.unit[u][q.started]))
                        q.ops.push_back(op);
                    q.ops.push_back({true, csr.ctrl, 1});   // START (the last op)
                }
            }
            if (q.running || !q.ops.empty()) all_done = false;
        }
        if (all_done) break;
        // this cycle's register accesses, one per unit
        bool did[UNITS] = {};
        for (int u = 0; u < UNITS; u++) {
            Seq& q = seq[u];
            if (q.ops.empty()) continue;
            const CsrOp& op = q.ops.front();
            Unit& hu = h.units[u];
            *hu.csr_addr = op.addr;
            *hu.csr_w_data = op.value;
            *hu.csr_w_en = op.write;
            *hu.csr_r_en = !op.write;
            q.op_is_start = op.write && q.ops.size() == 1 && op.addr == csr.ctrl;
            if (q.op_is_start) {
                arm_unit(hu, job.unit[u][q.started]);
                q.runs.emplace_back();
                q.runs.back().start = h.cycles - t0;
            }
            did[u] = true;
        }
        h.cycle();
        for (int u = 0; u < UNITS; u++) {
            if (!did[u]) continue;
            Seq& q = seq[u];
            Unit& hu = h.units[u];
            *hu.csr_w_en = 0;
            *hu.csr_r_en = 0;
            if (!q.ops.front().write) {
                q.reads.push_back(*hu.csr_r_data);
                if (q.reads.size() == nreads) {   // the finished run's read-out is complete
                    RunRecord& r = q.runs[q.runs.size() - (q.op_is_start ? 2 : 1)];
                    r.status = uint32_t(q.reads[0]);
                    r.fault_addr = q.reads[1] | q.reads[2] << 32;
                    for (size_t i = 0; i < ncounters; i++)
                        r.counters.push_back(q.reads[3 + 2 * i] | q.reads[4 + 2 * i] << 32);
                    q.reads.clear();
                }
            }
            q.ops.pop_front();
            if (q.op_is_start) {
                hu.seed_load = false;
                q.started += 1;
                q.running = true;
                q.op_is_start = false;
            }
        }
        if (h.cycles - t0 >= job.max_cycles) {
            timeout = true;
            break;
        }
        if (h.any_cap_full_rose()) h.dump_full_captures();
    }
    h.end_capture();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    uint64_t drain_cycles = h.cycles - t0;
    std::vector<uint64_t> mem_stats;
    uint32_t nstats = h.read(0, csr.config3);
    for (uint32_t i = 0; i < nstats; i++) mem_stats.push_back(h.read64(0, csr.mem_stats + 8 * i));
    for (int u = 0; u < UNITS; u++) {
        for (size_t k = 0; k < seq[u].runs.size(); k++) {
            RunRecord& r = seq[u].runs[k];
            if (timeout && r.counters.empty()) {   // unfinished: its tokens so far
                r.data = h.units[u].data;
                r.ctrl = h.units[u].ctrl;
                r.counters.assign(ncounters, 0);
            }
            r.mem_stats = mem_stats;
            write_record(out, dir, n, u, k, r, timeout, drain_cycles, wall);
        }
    }
    out.flush();
    return !timeout;
}

}  // namespace
