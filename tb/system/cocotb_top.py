"""cocotb test of the system top: runs the jobs that ``tb.harness`` wrote into ``$EMBER_RTL_JOB``.

One simulator process runs a list of jobs (so many small programs share one Verilator start-up).
Per job: load the memory image (file + ``$readmemh``, or the per-word back door), load the
program, arguments and memory limit through the registers, start, drain both output queues
(with seeded random back-pressure), then read the status and the counters.

Signals are driven and sampled at the falling clock edge: what is set there is seen by the next
rising edge, and what is read there has settled after the previous one.
"""

import json
import os
import random
import time
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from hw.core_if import CSR, csr_arg
from hw.tmu import COUNTERS

MASK64 = (1 << 64) - 1


class TB:
    """Clock, reset, register port, memory back door and output-queue sinks of the system top."""

    def __init__(self, dut):
        self.dut = dut
        self.fall = FallingEdge(dut.clk)

    async def start(self):
        dut = self.dut
        cocotb.start_soon(Clock(dut.clk, 2, units="ns").start())
        dut.rst.value = 1
        for sig in (dut.csr__addr, dut.csr__w_en, dut.csr__w_data, dut.csr__r_en,
                    dut.backdoor__addr, dut.backdoor__data, dut.backdoor__en,
                    dut.image_clear, dut.image_load, dut.data_out__ready, dut.ctrl_out__ready):
            sig.value = 0
        for _ in range(3):
            await self.fall
        dut.rst.value = 0
        await self.fall

    # All helpers are entered right after a falling edge and return right after one.
    async def write(self, addr, value):
        dut = self.dut
        dut.csr__addr.value = addr
        dut.csr__w_data.value = value & 0xFFFF_FFFF
        dut.csr__w_en.value = 1
        await self.fall
        dut.csr__w_en.value = 0

    async def write64(self, addr, value):
        await self.write(addr, value & 0xFFFF_FFFF)
        await self.write(addr + 4, (value & MASK64) >> 32)

    async def read(self, addr):
        dut = self.dut
        dut.csr__addr.value = addr
        dut.csr__r_en.value = 1
        await self.fall
        dut.csr__r_en.value = 0
        return int(dut.csr__r_data.value)

    async def read64(self, addr):
        lo = await self.read(addr)
        hi = await self.read(addr + 4)
        return lo | hi << 32

    async def load_image_file(self, path, job_dir):
        os.replace(path, Path(job_dir) / "image.hex")
        self.dut.image_clear.value = 1
        self.dut.image_load.value = 1
        await self.fall
        self.dut.image_clear.value = 0
        self.dut.image_load.value = 0

    async def load_image_backdoor(self, words):
        dut = self.dut
        dut.image_clear.value = 1
        await self.fall
        dut.image_clear.value = 0
        dut.backdoor__en.value = 1
        for i, w in enumerate(words):
            dut.backdoor__addr.value = i
            dut.backdoor__data.value = w
            await self.fall
        dut.backdoor__en.value = 0

    async def run_job(self, job, job_dir):
        dut = self.dut
        if job.get("backdoor_words") is not None:
            await self.load_image_backdoor(job["backdoor_words"])
        else:
            await self.load_image_file(job["image"], job_dir)
        await self.write(CSR.PROG_ADDR, 0)
        for w in job["program_words"]:
            await self.write(CSR.PROG_DATA, w)
        await self.write(CSR.PROG_LEN, job["prog_len"])
        for n, a in enumerate(job["args"]):
            await self.write64(csr_arg(n), a)
        await self.write64(CSR.MEM_LIMIT_LO, job["mem_limit"])
        if job.get("watchdog") is not None:
            await self.write(CSR.WATCHDOG, job["watchdog"])
        await self.write(CSR.CTRL, 1)

        data, ctrl = [], []
        t0 = time.perf_counter()
        cycles, timeout = await self.drain(data, ctrl, job["backpressure"], job["seed"],
                                           job["max_cycles"])
        wall = time.perf_counter() - t0

        status = await self.read(CSR.STATUS)
        fault_addr = await self.read64(CSR.FAULT_ADDR_LO)
        counters = {}
        for i, name in enumerate(COUNTERS):
            counters[name] = await self.read64(CSR.COUNTERS + 8 * i)
        return {"data": data, "ctrl": ctrl, "status": status, "fault_addr": fault_addr,
                "counters": counters, "timeout": timeout, "drain_cycles": cycles,
                "drain_wall": wall}

    async def drain(self, data, ctrl, backpressure, seed, max_cycles):
        """Pop both queues until the unit is done and both are empty. Returns (cycles, timeout)."""
        dut = self.dut
        fall = self.fall
        dv, dp = dut.data_out__valid, dut.data_out__payload
        cv, cp = dut.ctrl_out__valid, dut.ctrl_out__payload
        done = dut.done
        idle = 0
        cycles = 0
        if backpressure <= 0.0:
            dut.data_out__ready.value = 1
            dut.ctrl_out__ready.value = 1
            while cycles < max_cycles:
                await fall
                cycles += 1
                d = dv.value
                c = cv.value
                if d:
                    data.append(int(dp.value))
                if c:
                    ctrl.append(int(cp.value))
                if not (d or c):
                    if done.value:
                        idle += 1
                        if idle >= 4:
                            break
                else:
                    idle = 0
        else:
            rng = random.Random(seed)
            rnd = rng.random
            dr, cr = dut.data_out__ready, dut.ctrl_out__ready
            dut.data_out__ready.value = 0
            dut.ctrl_out__ready.value = 0
            while cycles < max_cycles:
                await fall
                cycles += 1
                rd = rnd() >= backpressure
                rc = rnd() >= backpressure
                dr.value = rd
                cr.value = rc
                d = dv.value
                c = cv.value
                if d and rd:
                    data.append(int(dp.value))
                if c and rc:
                    ctrl.append(int(cp.value))
                if not (d or c):
                    if done.value:
                        idle += 1
                        if idle >= 4:
                            break
                else:
                    idle = 0
        dut.data_out__ready.value = 0
        dut.ctrl_out__ready.value = 0
        await fall
        return cycles, cycles >= max_cycles


@cocotb.test()
async def run_jobs(dut):
    job_dir = Path(os.environ["EMBER_RTL_JOB"])
    jobs = json.loads((job_dir / "jobs.json").read_text())
    tb = TB(dut)
    await tb.start()
    results = []
    for job in jobs:
        results.append(await tb.run_job(job, job_dir))
    (job_dir / "results.json").write_text(json.dumps(results))
