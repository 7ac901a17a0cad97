// The Verilated system top and what sim/system_top.v puts around it: per unit the output-queue
// sinks (xorshift32 back-pressure generators or the core model), the capture buffers and the
// `finished` detector (Unit); the clock, reset, register port, image load and dump pulse
// (Harness).
#pragma once

#include "config.h"
#include "core_model.h"
#include "verilated.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

const uint64_t DATA_CAP = 1u << 20;   // capture buffer sizes of sim/system_top.v
const uint64_t CTRL_CAP = 1u << 18;

uint32_t xorshift32(uint32_t x) {
    x ^= x << 13;
    x ^= x >> 17;
    return x ^ (x << 5);
}

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
#ifdef MULTI_TOP
        top_->stats_clear = 0;
#endif
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

    // The cycle after a START write, in which the started units' start pulse is high. With
    // `clear_stats` the memory's statistics restart at its edge: hw.system.System restarts them
    // with every start pulse by itself; hw.multi_system.MultiSystem (MULTI_TOP) only with its
    // stats_clear input, set here, so the harness sets it for a job's first START only and the
    // statistics of a job cover all its runs (and equal System's for one program per unit).
    void start_pulse_cycle(bool clear_stats) {
#ifdef MULTI_TOP
        top_->stats_clear = clear_stats;
#endif
        cycle();
#ifdef MULTI_TOP
        top_->stats_clear = 0;
#endif
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
    // The units that filled their capture buffers: dump them (a run goes on after it).
    void dump_full_captures() {
        bool full[UNITS];
        for (int u = 0; u < UNITS; u++) full[u] = units[u].cap_full;
        do_dump(full);
    }
    // The end of a job: capture stops, the core models stop counting, one cycle settles, and
    // every unit's captured tokens are dumped.
    void end_capture() {
        for (Unit& unit : units) unit.capture = false;
        core_clock = false;
        cycle();
        bool all[UNITS];
        for (bool& a : all) a = true;
        do_dump(all);
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

}  // namespace
