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
// model of the execute side (CoreModel, harness/core_model.h) instead of the back-pressure generators, so a slow
// core back-pressures the unit and a fast one waits for it in the same simulation; the tokens
// captured are the same (capture does not depend on who drives `ready`).
//
// Usage: ember_harness <job dir> [+HBM_IMAGE=<job dir>/image.hex]
//   <job dir>/jobs.txt    input (written by sim/fast.py; format documented there)
//   <job dir>/results.txt output: one block per job (format documented in sim/fast.py);
//                         tokens in data_<n>.bin (uint64 little-endian) and ctrl_<n>.bin (uint16)
// Build parameters: DATA_TOKENS (the data beat's width in tokens, TmuConfig.output_tokens: 1..32
// tokens, 64..2048 bits), UNITS and MULTI_TOP (harness/config.h).
//
// Several units (hw.multi_system.MultiSystem, compiled with -DMULTI_TOP -DUNITS=K): unit u's ports
// are csr__<u>__addr, data_out__<u>__valid, busy__<u>, ...; each unit has its own sink state
// (back-pressure generators, capture buffers, finished detector), program, arguments and results;
// the memory image is shared. All units are started in the same cycle (one CTRL write on every
// register port at once) and a job ends when every unit has finished (done or faulted, queues
// drained). With one unit (UNITS=1), MULTI_TOP or not, the sequence of cycles is the one above.
//
// A job may give a unit a *sequence* of programs (run_sequence, harness/sequence.h: one EmbeddingBag per table
// a mapping gave that unit): all units start their first program together as above; when a unit
// has finished one, it reads that run's status, fault address and counters and writes its next
// program, arguments and START on its own register port, one register access per cycle, while
// the other units go on running; the job ends when every unit has finished its last program.
// Each run's start cycle (from the common START write) is reported with its results.
// The memory's statistics of a multi-unit job restart with the job's common START only
// (hw.multi_system.MultiSystem's stats_clear, which the harness sets in the cycle of the start
// pulse; a unit's START does not clear them), so they cover the whole job, every program of
// every unit, and are read once at its end.
//
// The harness is one translation unit; each part is a header in sim/harness/ (sim/fast.py
// builds them all and keys the build cache on every one, sim.fast.HARNESS_SOURCES):
//   config.h      build parameters (DATA_TOKENS, UNITS, MULTI_TOP) and the model's port names
//   core_model.h  CoreModel, the execute side consuming a unit's output queues
//   dut.h         Unit (a unit's sinks, capture buffers, `finished` detector) and Harness (the
//                 Verilated top: clock, reset, register port, image load, dump pulse)
//   job_io.h      reading jobs.txt, writing results.txt and the token files
//   runs.h        starting a program on a unit; run_single, a job with one program per unit
//   sequence.h    run_sequence, a job in which a unit runs a sequence of programs
//   harness.cpp   main: the job loop (this file)
#include "harness/config.h"
#include "harness/core_model.h"
#include "harness/dut.h"
#include "harness/job_io.h"
#include "harness/runs.h"
#include "harness/sequence.h"

#include "verilated.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

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
        if (!run_single(h, csr, ncounters, job, n, dir, out)) break;
    }
    return 0;
}
