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
//
// A job may give a unit a *sequence* of programs (run_sequence below: one EmbeddingBag per table
// a mapping gave that unit): all units start their first program together as above; when a unit
// has finished one, it reads that run's status, fault address and counters and writes its next
// program, arguments and START on its own register port, one register access per cycle, while
// the other units go on running; the job ends when every unit has finished its last program.
// Each run's start cycle (from the common START write) is reported with its results.
#include "Vember_system.h"
#include "verilated.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
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
    std::vector<UnitJob> unit[UNITS];   // per unit, the programs it runs back to back (usually 1)
    uint64_t max_cycles = 0;
    bool single() const {   // one program per unit: the cycle sequence of the cocotb engine
        for (const auto& programs : unit)
            if (programs.size() != 1) return false;
        return true;
    }
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
    // every unit's register (those with `which` set, default all), in one cycle
    void write_all(uint32_t addr, uint32_t value, const bool* which = nullptr) {
        for (int u = 0; u < UNITS; u++) {
            if (which && !which[u]) continue;
            *units[u].csr_addr = addr;
            *units[u].csr_w_data = value;
            *units[u].csr_w_en = 1;
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
        hu.core.start();
    }
    hu.seed_load = true;
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

// A job in which some unit runs a sequence of programs (see the header). Units with no program
// stay idle. Per unit, a queue of register accesses on its own port (one per cycle, all units'
// in the same cycle): after a run has finished, read STATUS, FAULT_ADDR and the counters, then
// (if a program is left) write the next program's registers and START. The memory statistics
// are read once at the end (from unit 0's port) and reported with every run: they count from
// the last START of any unit (hw.multi_system: every START clears them).
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
    h.cycle();
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
        if (h.any_cap_full_rose()) {
            bool full[UNITS];
            for (int u = 0; u < UNITS; u++) full[u] = h.units[u].cap_full;
            h.do_dump(full);
        }
    }
    for (Unit& unit : h.units) unit.capture = false;
    h.core_clock = false;
    h.cycle();
    bool all[UNITS];
    for (bool& a : all) a = true;
    h.do_dump(all);
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
        if (!job.single()) {
            if (!run_sequence(h, csr, ncounters, job, n, dir, out)) break;
            continue;
        }
        for (int u = 0; u < UNITS; u++) {
            const UnitJob& unit = job.unit[u][0];
            for (const CsrOp& op : setup_ops(csr, unit)) h.write(u, op.addr, op.value);
            arm_unit(h.units[u], unit);
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
        if (timeout) break;
    }
    return 0;
}
