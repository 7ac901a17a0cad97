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
// payload is tokens[0..DATA_TOKENS) (64 bits each) then the count of valid tokens
// (bit_length(DATA_TOKENS) bits: 1..16 tokens, 64..1024 bits).
//
// Several units (hw.multi_system.MultiSystem, compiled with -DMULTI_TOP -DUNITS=K): unit u's ports
// are csr__<u>__addr, data_out__<u>__valid, busy__<u>, ...; each unit has its own sink state
// (back-pressure generators, capture buffers, finished detector), program, arguments and results;
// the memory image is shared. All units are started in the same cycle (one CTRL write on every
// register port at once) and a job ends when every unit has finished (done or faulted, queues
// drained). With one unit (UNITS=1), MULTI_TOP or not, the sequence of cycles is the one above.
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

#include <type_traits>
#include <utility>

#ifndef DATA_TOKENS
#define DATA_TOKENS 1
#endif
#ifndef UNITS
#define UNITS 1
#endif

// The name of unit u's port a__b (unit_port) or a (unit_wire) in the Verilated model.
#ifdef MULTI_TOP
#define UNIT_PORT(u, a, b) a##___05F##u##___05F##b
#define UNIT_WIRE(u, a) a##___05F##u
#else
#define UNIT_PORT(u, a, b) a##___05F##b
#define UNIT_WIRE(u, a) a
#endif
#define PORT_POINTER(name) std::remove_reference_t<decltype(std::declval<Vember_system&>().name)>*

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
};

struct Job {
    bool backdoor = false;
    std::string image;
    std::vector<uint64_t> backdoor_words;
    UnitJob unit[UNITS];
    uint64_t max_cycles = 0;
};

// One unit's ports in the model and the state of sim/system_top.v's sinks, capture and finished
// detector for it.
struct Unit {
    PORT_POINTER(UNIT_PORT(0, csr, addr)) csr_addr;
    PORT_POINTER(UNIT_PORT(0, csr, w_en)) csr_w_en;
    PORT_POINTER(UNIT_PORT(0, csr, w_data)) csr_w_data;
    PORT_POINTER(UNIT_PORT(0, csr, r_en)) csr_r_en;
    PORT_POINTER(UNIT_PORT(0, csr, r_data)) csr_r_data;
    PORT_POINTER(UNIT_PORT(0, data_out, ready)) data_ready_port;
    PORT_POINTER(UNIT_PORT(0, data_out, valid)) data_valid_port;
    PORT_POINTER(UNIT_PORT(0, data_out, payload)) data_payload_port;
    PORT_POINTER(UNIT_PORT(0, ctrl_out, ready)) ctrl_ready_port;
    PORT_POINTER(UNIT_PORT(0, ctrl_out, valid)) ctrl_valid_port;
    PORT_POINTER(UNIT_PORT(0, ctrl_out, payload)) ctrl_payload_port;
    PORT_POINTER(UNIT_WIRE(0, busy)) busy_port;
    PORT_POINTER(UNIT_WIRE(0, done)) done_port;

    CoreModel core;
    bool capture = false, dump = false, seed_load = false;
    uint32_t seed = 1, bp_threshold = 0;
    uint32_t lfsr_d = 0x12345679u, lfsr_c = 0x9E3779B9u;
    uint64_t data_n = 0, ctrl_n = 0;
    bool cap_full = false, finished = false, finished_rose = false, cap_full_rose = false,
         cap_rose_prev = false;
    int quiet = 0;
    std::vector<uint64_t> data;
    std::vector<uint16_t> ctrl;

    // sampled between the falling and the rising edge
    bool data_ready = false, ctrl_ready = false, dv = false, cv = false, busy = false,
         done = false;
    uint64_t beat[DATA_TOKENS];
    unsigned beat_count = 0;
    uint16_t ctrl_payload = 0;

    void drive() {
        bool sink_on = capture && !cap_full && !dump;
        if (core.active) {
            core.ready(data_ready, ctrl_ready);
            data_ready = data_ready && sink_on;
            ctrl_ready = ctrl_ready && sink_on;
        } else {
            data_ready = sink_on && (lfsr_d & 0xFFFF) >= bp_threshold;
            ctrl_ready = sink_on && (lfsr_c & 0xFFFF) >= bp_threshold;
        }
        *data_ready_port = data_ready;
        *ctrl_ready_port = ctrl_ready;
    }
    void sample() {
        dv = *data_valid_port;
        cv = *ctrl_valid_port;
        busy = *busy_port;
        done = *done_port;
        const auto& payload = *data_payload_port;   // VlWide: 32-bit words
        for (int i = 0; i < DATA_TOKENS; i++)
            beat[i] = uint64_t(payload[2 * i]) | (uint64_t(payload[2 * i + 1]) << 32);
        beat_count = payload[2 * DATA_TOKENS] & ((2u * DATA_TOKENS) - 1);   // count: bit_length(DATA_TOKENS) bits
        ctrl_payload = *ctrl_payload_port;
    }
    // the wrapper's registers, updated with the values before the edge; `core_clock`: the core
    // model counts this cycle (from the START write, like the unit's `cycles` counter)
    void update(bool core_clock) {
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
    }
};

// The DUT and its units.
class Harness {
  public:
    explicit Harness(VerilatedContext* ctx) : top_(new Vember_system{ctx}) {
#define BIND_UNIT(u)                                                          \
    units[u].csr_addr = &top_->UNIT_PORT(u, csr, addr);                       \
    units[u].csr_w_en = &top_->UNIT_PORT(u, csr, w_en);                       \
    units[u].csr_w_data = &top_->UNIT_PORT(u, csr, w_data);                   \
    units[u].csr_r_en = &top_->UNIT_PORT(u, csr, r_en);                       \
    units[u].csr_r_data = &top_->UNIT_PORT(u, csr, r_data);                   \
    units[u].data_ready_port = &top_->UNIT_PORT(u, data_out, ready);          \
    units[u].data_valid_port = &top_->UNIT_PORT(u, data_out, valid);          \
    units[u].data_payload_port = &top_->UNIT_PORT(u, data_out, payload);      \
    units[u].ctrl_ready_port = &top_->UNIT_PORT(u, ctrl_out, ready);          \
    units[u].ctrl_valid_port = &top_->UNIT_PORT(u, ctrl_out, valid);          \
    units[u].ctrl_payload_port = &top_->UNIT_PORT(u, ctrl_out, payload);      \
    units[u].busy_port = &top_->UNIT_WIRE(u, busy);                           \
    units[u].done_port = &top_->UNIT_WIRE(u, done);
        BIND_UNIT(0)
#if UNITS > 1
        BIND_UNIT(1)
#endif
#if UNITS > 2
        BIND_UNIT(2)
        BIND_UNIT(3)
#endif
#if UNITS > 4
        BIND_UNIT(4)
        BIND_UNIT(5)
        BIND_UNIT(6)
        BIND_UNIT(7)
#endif
#if UNITS != 1 && UNITS != 2 && UNITS != 4 && UNITS != 8
#error "UNITS must be 1, 2, 4 or 8"
#endif
#undef BIND_UNIT
        top_->clk = 0;
        top_->rst = 1;
        top_->eval();
    }
    ~Harness() { top_->final(); }

    // One clock cycle from a falling edge to the next: the inputs set since the last call are
    // seen by the rising edge; outputs are read after it (cocotb: drive at and sample after
    // FallingEdge).
    void cycle() {
        for (Unit& u : units) u.drive();
        top_->clk = 0;
        top_->eval();
        for (Unit& u : units) u.sample();
        top_->clk = 1;
        top_->eval();
        for (Unit& u : units) u.update(core_clock);
        cycles += 1;
    }

    void reset() {
        top_->rst = 1;
        for (int i = 0; i < 3; i++) cycle();
        top_->rst = 0;
        cycle();
    }

    void write(int u, uint32_t addr, uint32_t value) {
        *units[u].csr_addr = addr;
        *units[u].csr_w_data = value;
        *units[u].csr_w_en = 1;
        cycle();
        *units[u].csr_w_en = 0;
    }
    void write64(int u, uint32_t addr, uint64_t value) {
        write(u, addr, uint32_t(value));
        write(u, addr + 4, uint32_t(value >> 32));
    }
    void write_all(uint32_t addr, uint32_t value) {   // every unit's register, in one cycle
        for (Unit& unit : units) {
            *unit.csr_addr = addr;
            *unit.csr_w_data = value;
            *unit.csr_w_en = 1;
        }
        cycle();
        for (Unit& unit : units) *unit.csr_w_en = 0;
    }
    uint32_t read(int u, uint32_t addr) {
        *units[u].csr_addr = addr;
        *units[u].csr_r_en = 1;
        cycle();
        *units[u].csr_r_en = 0;
        return *units[u].csr_r_data;
    }
    uint64_t read64(int u, uint32_t addr) {
        uint64_t lo = read(u, addr);
        return lo | uint64_t(read(u, addr + 4)) << 32;
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
    // The dump pulse of the units with `which` set and the cycle after it (sim/system_top.py
    // TB.dump).
    void do_dump(const bool* which) {
        for (int u = 0; u < UNITS; u++) units[u].dump = which[u];
        cycle();
        for (Unit& unit : units) unit.dump = false;
        cycle();
    }
    bool all_finished() const {
        for (const Unit& u : units)
            if (!u.finished) return false;
        return true;
    }
    bool any_cap_full_rose() const {
        for (const Unit& u : units)
            if (u.cap_full_rose) return true;
        return false;
    }

    std::unique_ptr<Vember_system> top_;
    Unit units[UNITS];
    bool core_clock = false;   // the core models count cycles from the START write
    uint64_t cycles = 0;
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
        for (UnitJob& unit : job.unit) {
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
        for (int u = 0; u < UNITS; u++) {
            const UnitJob& unit = job.unit[u];
            h.write(u, csr.prog_addr, 0);
            for (uint32_t w : unit.program_words) h.write(u, csr.prog_data, w);
            h.write(u, csr.prog_len, unit.prog_len);
            for (size_t i = 0; i < unit.args.size(); i++)
                h.write64(u, csr.args + 8 * i, unit.args[i]);
            h.write64(u, csr.mem_limit_lo, unit.mem_limit);
            if (unit.watchdog >= 0) h.write(u, csr.watchdog, uint32_t(unit.watchdog));
            Unit& hu = h.units[u];
            hu.bp_threshold = unit.bp_threshold;
            hu.seed = unit.seed;
            hu.core.active = unit.core;
            if (unit.core) {
                hu.core.cycles_per_control = unit.cycles_per_control;
                hu.core.tokens_per_cycle = unit.tokens_per_cycle;
                hu.core.buffer_tokens = unit.buffer_beats * DATA_TOKENS;
                hu.core.schedule = unit.schedule;
                hu.core.start();
            }
            hu.seed_load = true;
        }
        h.write_all(csr.ctrl, 1);         // every unit starts in the same cycle
        for (Unit& unit : h.units) unit.seed_load = false;
        h.core_clock = true;              // the cycles the units' `cycles` counters count
        h.cycle();                        // the start has cleared DONE
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
            bool full[UNITS], any_full = false;
            for (int u = 0; u < UNITS; u++) any_full |= full[u] = h.units[u].cap_full;
            if (any_full) {
                h.do_dump(full);
                continue;
            }
            break;
        }
        for (Unit& unit : h.units) unit.capture = false;
        h.core_clock = false;
        h.cycle();
        bool all[UNITS];
        for (bool& a : all) a = true;
        h.do_dump(all);
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        uint64_t drain_cycles = h.cycles - c0;

        for (int u = 0; u < UNITS; u++) {
            uint32_t status = h.read(u, csr.status);
            uint64_t fault_addr = h.read64(u, csr.fault_addr_lo);
            std::vector<uint64_t> counters;
            for (size_t i = 0; i < ncounters; i++)
                counters.push_back(h.read64(u, csr.counters + 8 * i));
            std::vector<uint64_t> mem_stats;
            uint32_t nstats = h.read(u, csr.config3);
            for (uint32_t i = 0; i < nstats; i++)
                mem_stats.push_back(h.read64(u, csr.mem_stats + 8 * i));

            std::string suffix = std::to_string(n) + "_" + std::to_string(u) + ".bin";
            write_binary(dir + "/data_" + suffix, h.units[u].data);
            write_binary(dir + "/ctrl_" + suffix, h.units[u].ctrl);
            out << "result " << n << " unit " << u << " timeout " << timeout << " status "
                << status << " fault_addr " << fault_addr << " drain_cycles " << drain_cycles
                << " drain_wall " << wall << "\n";
            const CoreModel& core = h.units[u].core;
            out << "core " << core.active << " " << core.mismatch << " " << core.finished << " "
                << core.finish_cycle << " " << core.starved << " " << core.first_cycle << "\n";
            h.units[u].core.active = false;
            out << "counters " << counters.size();
            for (uint64_t c : counters) out << " " << c;
            out << "\nmem_stats " << mem_stats.size();
            for (uint64_t s : mem_stats) out << " " << s;
            out << "\n";
        }
        out.flush();
        if (timeout) break;
    }
    return 0;
}
