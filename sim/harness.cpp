// Verilator C++ harness of the system top (hw.system.System, Verilog module ember_system): runs
// the jobs that sim.fast wrote, with no Python in the per-cycle loop.
//
// It does, cycle for cycle, what the cocotb path does (sim/system_top.v + sim/system_top.py):
// the same reset, register writes and reads in the same order, the same image load (image_clear +
// image_load with $readmemh of +HBM_IMAGE=, or the per-word back door), the same output-queue
// sinks with the same xorshift32 back-pressure generators (reseeded by the START write), the same
// capture buffers (sinks stall while one is full, emptied by a one-cycle dump), the same
// `finished` detector and the same read-out of status, fault address, unit counters and memory
// statistics. So tokens, fault code/address, cycle counts and statistics are identical to the
// cocotb engine's, with or without back-pressure.
//
// Only here (the cocotb engine refuses it): a job with a core schedule has its sinks driven by a
// model of the execute side (CoreModel below) instead of the back-pressure generators, so a slow
// core back-pressures the unit and a fast one waits for it in the same simulation; the tokens
// captured are the same (capture does not depend on who drives `ready`).
//
// Usage: ember_harness <job dir> [+HBM_IMAGE=<job dir>/image.hex]
//   <job dir>/jobs.txt    input (written by sim/fast.py; format documented there)
//   <job dir>/results.txt output: one block per job (format documented in sim/fast.py);
//                         tokens in data_<n>.bin (uint64 little-endian) and ctrl_<n>.bin (uint16)
// Verilator spells the double underscore of Amaranth's port names (csr__addr) as ___05F.
// DATA_TOKENS (compiler -D, TmuConfig.output_tokens) is the width of a data beat in tokens: the
// payload is tokens[0..DATA_TOKENS) (64 bits each) then the count of valid tokens.
#include "Vember_system.h"
#include "verilated.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#ifndef DATA_TOKENS
#define DATA_TOKENS 1
#endif

namespace {

const uint64_t DATA_CAP = 1u << 20;   // capture buffer sizes of sim/system_top.v
const uint64_t CTRL_CAP = 1u << 18;

uint32_t xorshift32(uint32_t x) {
    x ^= x << 13;
    x ^= x >> 17;
    return x ^ (x << 5);
}

struct Csr {   // register byte offsets (hw.core_if.CSR), given by the job file
    uint32_t prog_addr, prog_data, prog_len, args, mem_limit_lo, watchdog, ctrl, status,
        fault_addr_lo, counters, config3, mem_stats;
};

struct Job {
    bool backdoor = false;
    std::string image;
    std::vector<uint64_t> backdoor_words;
    std::vector<uint32_t> program_words;
    uint32_t prog_len = 0;
    std::vector<uint64_t> args;
    uint64_t mem_limit = 0;
    long long watchdog = -1;   // -1: leave the register alone
    uint32_t bp_threshold = 0;
    uint32_t seed = 0;
    uint64_t max_cycles = 0;
    bool core = false;                 // a core schedule: the sinks are the core model
    uint32_t cycles_per_control = 0, tokens_per_cycle = 0, buffer_beats = 0;
    std::vector<uint32_t> schedule;
};

// The execute side as a consumer of the output queues (a job with a core schedule; docs/
// performance.md "The coupled core model"; sw.runtime.execute.CoreCostModel is the same rate
// model without waiting). Per control token the core pops it (ready on ctrl), is busy
// cycles_per_control cycles (the pop cycle included), then takes that callback's operands from
// its operand buffer at tokens_per_cycle per cycle (waiting when the buffer is empty); the buffer
// (buffer_tokens) accepts a data beat (ready on data) when a whole beat fits after this cycle's
// take. schedule[i] is the number of operands the callback of control token i pops (DONE last,
// with 0). Two calls per cycle: ready() before the clock edge, commit() after it with what fired.
// If the stream and the schedule disagree (more or fewer tokens, DONE elsewhere, or no token
// moving for long while the core waits) the model gives up: `mismatch`, and from then on both
// queues are always ready (a free-running sink), so a wrong schedule never deadlocks the run.
struct CoreModel {
    static const uint64_t STUCK_LIMIT = 1u << 14;   // waiting cycles, the unit refused on the other queue
    static const uint64_t DRAINED_LIMIT = 4;        // waiting cycles for an empty queue of a done unit
    bool active = false;
    uint32_t cycles_per_control = 6, tokens_per_cycle = 8, buffer_tokens = 2 * DATA_TOKENS;
    std::vector<uint32_t> schedule;
    // state
    size_t next = 0;            // index of the next control token in the schedule
    uint32_t busy = 0;          // cycles of the current control token's dispatch + body left
    uint32_t need = 0;          // operands the current callback still has to take
    uint64_t buffered = 0;      // tokens in the operand buffer
    uint32_t take = 0;          // operands taken in this cycle (set by ready())
    bool finished = false, mismatch = false;
    uint64_t cycle = 0, first_cycle = 0, finish_cycle = 0, starved = 0, stuck = 0, drained = 0;

    void start() {   // before the START write
        next = 0;
        busy = need = take = 0;
        buffered = cycle = first_cycle = finish_cycle = starved = stuck = drained = 0;
        finished = mismatch = false;
    }
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
        ctrl_ready = waiting_for_ctrl();
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
        bool want_ctrl = busy == 0 && need == 0 && !ctrl_fire;
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
        if (busy > 0) busy -= 1;
        if (data_fire) buffered += count;
        if (ctrl_fire) {
            if (next == 0) first_cycle = cycle;
            bool done_token = token == 0xFFFF;
            bool last = next + 1 == schedule.size();
            if (next >= schedule.size() || done_token != last) {
                mismatch = true;
            } else if (done_token) {
                finished = true;
                finish_cycle = cycle;
                if (buffered > 0) mismatch = true;   // operands nobody popped
            } else {
                busy = cycles_per_control - 1;
                need = schedule[next];
            }
            next += 1;
        }
        if (drained >= DRAINED_LIMIT || (refused && stuck >= STUCK_LIMIT)) mismatch = true;
    }
};

// The DUT plus the state of sim/system_top.v's sinks, capture and finished detector.
class Harness {
  public:
    explicit Harness(VerilatedContext* ctx) : top_(new Vember_system{ctx}) {
        top_->clk = 0;
        top_->rst = 1;
        top_->eval();
    }
    ~Harness() { top_->final(); }

    // One clock cycle from a falling edge to the next: the inputs set since the last call are
    // seen by the rising edge; outputs are read after it (cocotb: drive at and sample after
    // FallingEdge).
    void cycle() {
        bool sink_on = capture && !cap_full && !dump;
        bool data_ready, ctrl_ready;
        if (core.active) {
            core.ready(data_ready, ctrl_ready);
            data_ready = data_ready && sink_on;
            ctrl_ready = ctrl_ready && sink_on;
        } else {
            data_ready = sink_on && (lfsr_d & 0xFFFF) >= bp_threshold;
            ctrl_ready = sink_on && (lfsr_c & 0xFFFF) >= bp_threshold;
        }
        top_->data_out___05Fready = data_ready;
        top_->ctrl_out___05Fready = ctrl_ready;
        top_->clk = 0;
        top_->eval();
        bool dv = top_->data_out___05Fvalid, cv = top_->ctrl_out___05Fvalid;
        bool busy = top_->busy, done = top_->done;
        uint64_t beat[DATA_TOKENS];
        const auto& payload = top_->data_out___05Fpayload;   // VlWide: 32-bit words
        for (int i = 0; i < DATA_TOKENS; i++)
            beat[i] = uint64_t(payload[2 * i]) | (uint64_t(payload[2 * i + 1]) << 32);
        unsigned beat_count = payload[2 * DATA_TOKENS] & 0xF;
        uint16_t ctrl_payload = top_->ctrl_out___05Fpayload;
        top_->clk = 1;
        top_->eval();
        // the wrapper's registers, updated with the values before the edge
        bool data_fire = dv && data_ready, ctrl_fire = cv && ctrl_ready;
        if (core.active && core_clock)
            core.commit(data_fire, data_fire ? beat_count : 0, ctrl_fire, ctrl_payload, dv, cv,
                        (dv && !data_ready) || (cv && !ctrl_ready), !busy && done);
        if (seed_load) {
            lfsr_d = seed | 1u;
            lfsr_c = (seed ^ 0x9E3779B9u) | 1u;
        } else {
            lfsr_d = xorshift32(lfsr_d);
            lfsr_c = xorshift32(lfsr_c);
        }
        if (data_fire)
            for (unsigned i = 0; i < beat_count; i++) data.push_back(beat[i]);
        if (ctrl_fire) ctrl.push_back(ctrl_payload);
        uint64_t data_taken = data_fire ? beat_count : 0;
        bool next_cap_full = (data_n + data_taken + DATA_TOKENS > DATA_CAP) ||
                             (ctrl_n + ctrl_fire >= CTRL_CAP);
        data_n += data_taken;
        ctrl_n += ctrl_fire;
        cap_full = next_cap_full;
        if (dump) {
            data_n = ctrl_n = 0;
            cap_full = false;
        }
        bool was_finished = finished;
        if (!capture || busy || !done || dv || cv || core.holding()) {
            quiet = 0;
            finished = false;
        } else if (quiet != 7) {
            finished = quiet >= 3;
            quiet += 1;
        }
        finished_rose = !was_finished && finished;
        cap_full_rose = !cap_rose_prev && cap_full;
        cap_rose_prev = cap_full;
        cycles += 1;
    }

    void reset() {
        top_->rst = 1;
        for (int i = 0; i < 3; i++) cycle();
        top_->rst = 0;
        cycle();
    }

    void write(uint32_t addr, uint32_t value) {
        top_->csr___05Faddr = addr;
        top_->csr___05Fw_data = value;
        top_->csr___05Fw_en = 1;
        cycle();
        top_->csr___05Fw_en = 0;
    }
    void write64(uint32_t addr, uint64_t value) {
        write(addr, uint32_t(value));
        write(addr + 4, uint32_t(value >> 32));
    }
    uint32_t read(uint32_t addr) {
        top_->csr___05Faddr = addr;
        top_->csr___05Fr_en = 1;
        cycle();
        top_->csr___05Fr_en = 0;
        return top_->csr___05Fr_data;
    }
    uint64_t read64(uint32_t addr) {
        uint64_t lo = read(addr);
        return lo | uint64_t(read(addr + 4)) << 32;
    }

    bool load_image_file(const std::string& path, const std::string& target) {
        if (std::rename(path.c_str(), target.c_str()) != 0) return false;
        top_->image_clear = 1;
        top_->image_load = 1;
        cycle();
        top_->image_clear = 0;
        top_->image_load = 0;
        return true;
    }
    void load_image_backdoor(const std::vector<uint64_t>& words) {
        top_->image_clear = 1;
        cycle();
        top_->image_clear = 0;
        top_->backdoor___05Fen = 1;
        for (size_t i = 0; i < words.size(); i++) {
            top_->backdoor___05Faddr = i;
            top_->backdoor___05Fdata = words[i];
            cycle();
        }
        top_->backdoor___05Fen = 0;
    }
    void do_dump() {   // the dump pulse and the cycle after it (sim/system_top.py TB.dump)
        dump = true;
        cycle();
        dump = false;
        cycle();
    }

    std::unique_ptr<Vember_system> top_;
    CoreModel core;
    bool core_clock = false;   // the core model counts cycles from the START write
    bool capture = false, dump = false, seed_load = false;
    uint32_t seed = 1, bp_threshold = 0;
    uint32_t lfsr_d = 0x12345679u, lfsr_c = 0x9E3779B9u;
    uint64_t data_n = 0, ctrl_n = 0;
    bool cap_full = false, finished = false, finished_rose = false, cap_full_rose = false,
         cap_rose_prev = false;
    int quiet = 0;
    uint64_t cycles = 0;
    std::vector<uint64_t> data;
    std::vector<uint16_t> ctrl;
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
        in >> word >> count;              // "program"
        job.program_words.resize(count);
        for (auto& w : job.program_words) in >> std::hex >> w >> std::dec;
        in >> word >> job.prog_len >> word >> count;   // "prog_len", "args"
        job.args.resize(count);
        for (auto& a : job.args) in >> std::hex >> a >> std::dec;
        in >> word >> std::hex >> job.mem_limit >> std::dec;
        in >> word >> job.watchdog >> word >> job.bp_threshold >> word >> job.seed >> word >>
            job.max_cycles;
        in >> word >> count;              // "core"
        if (count > 0) {
            job.core = true;
            in >> job.cycles_per_control >> job.tokens_per_cycle >> job.buffer_beats;
            job.schedule.resize(count);
            for (auto& k : job.schedule) in >> k;
        }
        jobs.push_back(std::move(job));
    }
    return bool(in) && jobs.size() == njobs;
}

template <typename T>
void write_binary(const std::string& path, const std::vector<T>& v) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s <job dir> [+HBM_IMAGE=<path>]\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    Csr csr;
    size_t ncounters = 0;
    std::vector<Job> jobs;
    if (!read_jobs(dir + "/jobs.txt", csr, ncounters, jobs)) {
        std::fprintf(stderr, "%s/jobs.txt: malformed job file\n", dir.c_str());
        return 2;
    }
    Harness h(ctx.get());
    h.reset();
    std::ofstream out(dir + "/results.txt");
    for (size_t n = 0; n < jobs.size(); n++) {
        const Job& job = jobs[n];
        if (job.backdoor)
            h.load_image_backdoor(job.backdoor_words);
        else if (!h.load_image_file(job.image, dir + "/image.hex")) {
            std::fprintf(stderr, "job %zu: cannot move the memory image %s to %s/image.hex\n", n,
                         job.image.c_str(), dir.c_str());
            return 3;
        }
        h.write(csr.prog_addr, 0);
        for (uint32_t w : job.program_words) h.write(csr.prog_data, w);
        h.write(csr.prog_len, job.prog_len);
        for (size_t i = 0; i < job.args.size(); i++) h.write64(csr.args + 8 * i, job.args[i]);
        h.write64(csr.mem_limit_lo, job.mem_limit);
        if (job.watchdog >= 0) h.write(csr.watchdog, uint32_t(job.watchdog));
        h.bp_threshold = job.bp_threshold;
        h.seed = job.seed;
        h.core.active = job.core;
        if (job.core) {
            h.core.cycles_per_control = job.cycles_per_control;
            h.core.tokens_per_cycle = job.tokens_per_cycle;
            h.core.buffer_tokens = job.buffer_beats * DATA_TOKENS;
            h.core.schedule = job.schedule;
            h.core.start();
        }
        h.seed_load = true;
        h.write(csr.ctrl, 1);
        h.seed_load = false;
        h.core_clock = true;              // the cycles the unit's `cycles` counter counts
        h.cycle();                        // the start has cleared DONE
        h.capture = true;
        h.data.clear();
        h.ctrl.clear();

        auto t0 = std::chrono::steady_clock::now();
        uint64_t c0 = h.cycles;
        bool timeout = false;
        for (;;) {
            // First(RisingEdge(finished), RisingEdge(cap_full), Timer(max_cycles cycles)),
            // then the falling edge after it
            do {
                h.cycle();
                if (h.cycles - c0 >= job.max_cycles) timeout = true;
            } while (!h.finished_rose && !h.cap_full_rose && !timeout);
            if (timeout) break;
            if (h.cap_full) {
                h.do_dump();
                continue;
            }
            break;
        }
        h.capture = false;
        h.core_clock = false;
        h.cycle();
        h.do_dump();
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        uint64_t drain_cycles = h.cycles - c0;

        uint32_t status = h.read(csr.status);
        uint64_t fault_addr = h.read64(csr.fault_addr_lo);
        std::vector<uint64_t> counters;
        for (size_t i = 0; i < ncounters; i++) counters.push_back(h.read64(csr.counters + 8 * i));
        std::vector<uint64_t> mem_stats;
        uint32_t nstats = h.read(csr.config3);
        for (uint32_t i = 0; i < nstats; i++) mem_stats.push_back(h.read64(csr.mem_stats + 8 * i));

        write_binary(dir + "/data_" + std::to_string(n) + ".bin", h.data);
        write_binary(dir + "/ctrl_" + std::to_string(n) + ".bin", h.ctrl);
        out << "result " << n << " timeout " << timeout << " status " << status << " fault_addr "
            << fault_addr << " drain_cycles " << drain_cycles << " drain_wall " << wall << "\n";
        out << "core " << h.core.active << " " << h.core.mismatch << " " << h.core.finished << " "
            << h.core.finish_cycle << " " << h.core.starved << " " << h.core.first_cycle << "\n";
        h.core.active = false;
        out << "counters " << counters.size();
        for (uint64_t c : counters) out << " " << c;
        out << "\nmem_stats " << mem_stats.size();
        for (uint64_t s : mem_stats) out << " " << s;
        out << "\n";
        out.flush();
        if (timeout) break;
    }
    return 0;
}
