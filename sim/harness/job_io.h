// The job file the harness reads (jobs.txt, written by sim/fast.py, format documented there)
// and the records it writes (results.txt and the token files, same documentation).
#pragma once

#include "config.h"
#include "core_model.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Csr {   // register byte offsets (hw.core_if.CSR), given by the job file
    uint32_t prog_addr, prog_data, prog_len, args, mem_limit_lo, watchdog, ctrl, status,
        fault_addr_lo, counters, config3, mem_stats;
};

// What one unit runs in a job.
struct UnitJob {
    std::vector<uint32_t> program_words;
    uint32_t prog_len = 0;
    std::vector<uint64_t> args;
    uint64_t mem_limit = 0;
    long long watchdog = -1;   // -1: leave the register alone
    uint32_t bp_threshold = 0;
    uint32_t seed = 0;
    bool core = false;                 // a core schedule: the sinks are the core model
    uint32_t cycles_per_control = 0, tokens_per_cycle = 0, buffer_beats = 0;
    std::vector<uint32_t> schedule;
    std::vector<uint32_t> pace;        // cycles_per_control 0: a replayed core, one per control token
    std::vector<uint32_t> instructions;  // ... and its callbacks' instructions
    uint64_t window = 0;                 // ... and its window (instructions)
};

struct Job {
    bool backdoor = false;
    std::string image;
    std::vector<uint64_t> backdoor_words;
    std::vector<UnitJob> unit[UNITS];   // per unit, the programs it runs back to back (usually 1)
    uint64_t max_cycles = 0;
    bool single() const {   // one program per unit: the cycle sequence of the cocotb engine
        for (const auto& programs : unit)
            if (programs.size() != 1) return false;
        return true;
    }
};

bool read_jobs(const std::string& path, Csr& csr, size_t& counters, std::vector<Job>& jobs) {
    std::ifstream in(path);
    std::string word;
    size_t njobs = 0;
    if (!(in >> word) || word != "ember_jobs") return false;
    in >> word >> csr.prog_addr >> csr.prog_data >> csr.prog_len >> csr.args >> csr.mem_limit_lo >>
        csr.watchdog >> csr.ctrl >> csr.status >> csr.fault_addr_lo >> csr.counters >> csr.config3 >>
        csr.mem_stats;
    in >> word >> counters >> word >> njobs;
    for (size_t n = 0; n < njobs && in; n++) {
        Job job;
        size_t count = 0;
        in >> word;                       // "job"
        in >> word;                       // "image" or "backdoor"
        if (word == "image") {
            in >> job.image;
        } else {
            job.backdoor = true;
            in >> count;
            job.backdoor_words.resize(count);
            for (auto& w : job.backdoor_words) in >> std::hex >> w >> std::dec;
        }
        size_t nunits = 0;
        in >> word >> nunits;             // "units"
        if (nunits != UNITS) {
            std::fprintf(stderr, "job %zu has %zu units; this harness was built for %d\n", n,
                         nunits, UNITS);
            return false;
        }
        for (auto& programs : job.unit) {
          size_t nprograms = 0;
          in >> word >> nprograms;        // "sequence"
          programs.resize(nprograms);
          for (UnitJob& unit : programs) {
            in >> word >> count;          // "program"
            unit.program_words.resize(count);
            for (auto& w : unit.program_words) in >> std::hex >> w >> std::dec;
            in >> word >> unit.prog_len >> word >> count;   // "prog_len", "args"
            unit.args.resize(count);
            for (auto& a : unit.args) in >> std::hex >> a >> std::dec;
            in >> word >> std::hex >> unit.mem_limit >> std::dec;
            in >> word >> unit.watchdog >> word >> unit.bp_threshold >> word >> unit.seed;
            in >> word >> count;          // "core"
            if (count > 0) {
                unit.core = true;
                in >> unit.cycles_per_control >> unit.tokens_per_cycle >> unit.buffer_beats;
                unit.schedule.resize(count);
                for (auto& k : unit.schedule) in >> k;
                if (unit.cycles_per_control == 0) {   // then the pace and the instructions,
                    unit.pace.resize(count);           // one per control token, and the window
                    for (auto& p : unit.pace) in >> p;
                    unit.instructions.resize(count);
                    for (auto& k : unit.instructions) in >> k;
                    in >> unit.window;
                }
            }
          }
        }
        in >> word >> job.max_cycles;
        jobs.push_back(std::move(job));
    }
    return bool(in) && jobs.size() == njobs;
}

template <typename T>
void write_binary(const std::string& path, const std::vector<T>& v) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
}

// One finished run of a unit.
struct RunRecord {
    uint64_t start = 0;   // cycle of its START write, from the common START write
    uint32_t status = 0;
    uint64_t fault_addr = 0;
    std::vector<uint64_t> counters, mem_stats;
    std::vector<uint64_t> data;
    std::vector<uint16_t> ctrl;
    CoreModel core;
};

void write_record(std::ofstream& out, const std::string& dir, size_t n, int u, size_t seq,
                  const RunRecord& r, bool timeout, uint64_t drain_cycles, double wall) {
    std::string suffix = std::to_string(n) + "_" + std::to_string(u) + "_" + std::to_string(seq) + ".bin";
    write_binary(dir + "/data_" + suffix, r.data);
    write_binary(dir + "/ctrl_" + suffix, r.ctrl);
    out << "result " << n << " unit " << u << " seq " << seq << " start " << r.start << " timeout "
        << timeout << " status " << r.status << " fault_addr " << r.fault_addr << " drain_cycles "
        << drain_cycles << " drain_wall " << wall << "\n";
    const CoreModel& core = r.core;
    out << "core " << core.active << " " << core.mismatch << " " << core.finished << " "
        << core.finish_cycle << " " << core.starved << " " << core.first_cycle << "\n";
    out << "counters " << r.counters.size();
    for (uint64_t c : r.counters) out << " " << c;
    out << "\nmem_stats " << r.mem_stats.size();
    for (uint64_t s : r.mem_stats) out << " " << s;
    out << "\n";
}

}  // namespace
