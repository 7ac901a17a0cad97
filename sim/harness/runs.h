// Starting programs on units (the register writes of a program and the sink state its START
// sets) and a job with one program per unit (run_single), as the cocotb engine runs it.
#pragma once

#include "config.h"
#include "dut.h"
#include "job_io.h"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace {

// The register writes that load `unit`'s program, arguments, memory limit and watchdog, in the
// order of sim/system_top.py TB.run_job (without the START write).
struct CsrOp {
    bool write;
    uint32_t addr, value;
};
std::vector<CsrOp> setup_ops(const Csr& csr, const UnitJob& unit) {
    std::vector<CsrOp> ops;
    ops.push_back({true, csr.prog_addr, 0});
    for (uint32_t w : unit.program_words) ops.push_back({true, csr.prog_data, w});
    ops.push_back({true, csr.prog_len, unit.prog_len});
    for (size_t i = 0; i < unit.args.size(); i++) {
        ops.push_back({true, uint32_t(csr.args + 8 * i), uint32_t(unit.args[i])});
        ops.push_back({true, uint32_t(csr.args + 8 * i + 4), uint32_t(unit.args[i] >> 32)});
    }
    ops.push_back({true, csr.mem_limit_lo, uint32_t(unit.mem_limit)});
    ops.push_back({true, csr.mem_limit_lo + 4, uint32_t(unit.mem_limit >> 32)});
    if (unit.watchdog >= 0) ops.push_back({true, csr.watchdog, uint32_t(unit.watchdog)});
    return ops;
}

// The sink state a START of `unit` sets (back-pressure threshold and seed, core model).
void arm_unit(Unit& hu, const UnitJob& unit) {
    hu.bp_threshold = unit.bp_threshold;
    hu.seed = unit.seed;
    hu.core.active = unit.core;
    if (unit.core) {
        hu.core.cycles_per_control = unit.cycles_per_control;
        hu.core.tokens_per_cycle = unit.tokens_per_cycle;
        hu.core.buffer_tokens = unit.buffer_beats * DATA_TOKENS;
        hu.core.schedule = unit.schedule;
        hu.core.pace = unit.pace;
        hu.core.instructions = unit.instructions;
        hu.core.window = unit.window;
        hu.core.start();
    }
    hu.seed_load = true;
}

// A job with one program per unit: sim/system_top.py TB.run_job cycle for cycle (see the header
// of sim/harness.cpp). Writes one record per unit; false if the job timed out.
bool run_single(Harness& h, const Csr& csr, size_t ncounters, const Job& job, size_t n,
                const std::string& dir, std::ofstream& out) {
    for (int u = 0; u < UNITS; u++) {
        const UnitJob& unit = job.unit[u][0];
        for (const CsrOp& op : setup_ops(csr, unit)) h.write(u, op.addr, op.value);
        arm_unit(h.units[u], unit);
    }
    h.write_all(csr.ctrl, 1);         // every unit starts in the same cycle
    for (Unit& unit : h.units) unit.seed_load = false;
    h.core_clock = true;              // the cycles the units' `cycles` counters count
    h.start_pulse_cycle(true);        // the start has cleared DONE; the memory's statistics restart
    for (Unit& unit : h.units) {
        unit.capture = true;
        unit.data.clear();
        unit.ctrl.clear();
    }

    auto t0 = std::chrono::steady_clock::now();
    uint64_t c0 = h.cycles;
    bool timeout = false;
    for (;;) {
        // First(every unit finished, RisingEdge(cap_full) of a unit, Timer(max_cycles
        // cycles)), then the falling edge after it
        do {
            h.cycle();
            if (h.cycles - c0 >= job.max_cycles) timeout = true;
        } while (!h.all_finished() && !h.any_cap_full_rose() && !timeout);
        if (timeout) break;
        bool any_full = false;
        for (const Unit& unit : h.units) any_full |= unit.cap_full;
        if (any_full) {
            h.dump_full_captures();
            continue;
        }
        break;
    }
    h.end_capture();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t drain_cycles = h.cycles - c0;

    for (int u = 0; u < UNITS; u++) {
        RunRecord r;
        r.status = h.read(u, csr.status);
        r.fault_addr = h.read64(u, csr.fault_addr_lo);
        for (size_t i = 0; i < ncounters; i++)
            r.counters.push_back(h.read64(u, csr.counters + 8 * i));
        uint32_t nstats = h.read(u, csr.config3);
        for (uint32_t i = 0; i < nstats; i++)
            r.mem_stats.push_back(h.read64(u, csr.mem_stats + 8 * i));
        r.data = std::move(h.units[u].data);
        r.ctrl = std::move(h.units[u].ctrl);
        h.units[u].data.clear();
        h.units[u].ctrl.clear();
        r.core = h.units[u].core;
        h.units[u].core.active = false;
        write_record(out, dir, n, u, 0, r, timeout, drain_cycles, wall);
    }
    out.flush();
    return !timeout;
}

}  // namespace
