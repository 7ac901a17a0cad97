"""cocotb test of the system top: runs the jobs that ``sim.system`` wrote into ``$EMBER_RTL_JOB``.

The toplevel is the Verilog wrapper ``sim/system_top.v``: it makes the clock, pops both output
queues with seeded pseudo-random back-pressure and captures the tokens, so Python does nothing
while the unit runs. One simulator process runs a list of jobs (one Verilator start-up for many
programs). Per job: load the memory image (a ``$readmemh`` file, or the per-word back door), load
the program, arguments and memory limit through the registers, start, wait until the run has
finished and both queues are empty (dumping the capture buffers whenever they fill up), then read
the status and the counters.

Signals are driven and sampled at the falling clock edge: what is set there is seen by the next
rising edge, and what is read there has settled after the previous one.
"""

import json
import os
import time
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, First, RisingEdge, Timer

from hw.core_if import CSR, csr_arg
from hw.tmu import COUNTERS

MASK64 = (1 << 64) - 1


def read_hex_tokens(path):
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().split():
        if line.startswith("//") or line.startswith("@"):
            continue
        out.append(int(line, 16))
    return out


class TB:
    """Register port, memory back door, image load and token capture of ``ember_tb_top``."""

    def __init__(self, dut, job_dir):
        self.dut = dut
        self.job_dir = Path(job_dir)
        self.fall = FallingEdge(dut.clk)

    async def start(self):
        dut = self.dut
        dut.rst.value = 1
        for _ in range(3):
            await self.fall
        dut.rst.value = 0
        await self.fall

    # All helpers are entered right after a falling edge and return right after one.
    async def write(self, addr, value):
        dut = self.dut
        dut.csr_addr.value = addr
        dut.csr_w_data.value = value & 0xFFFF_FFFF
        dut.csr_w_en.value = 1
        await self.fall
        dut.csr_w_en.value = 0

    async def write64(self, addr, value):
        await self.write(addr, value & 0xFFFF_FFFF)
        await self.write(addr + 4, (value & MASK64) >> 32)

    async def read(self, addr):
        dut = self.dut
        dut.csr_addr.value = addr
        dut.csr_r_en.value = 1
        await self.fall
        dut.csr_r_en.value = 0
        return int(dut.csr_r_data.value)

    async def read64(self, addr):
        lo = await self.read(addr)
        hi = await self.read(addr + 4)
        return lo | hi << 32

    async def load_image_file(self, path):
        os.replace(path, self.job_dir / "image.hex")
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
        dut.bd_en.value = 1
        for i, w in enumerate(words):
            dut.bd_addr.value = i
            dut.bd_data.value = w
            await self.fall
        dut.bd_en.value = 0

    async def dump(self, data, ctrl):
        dut = self.dut
        dut.dump.value = 1
        await self.fall
        dut.dump.value = 0
        data += read_hex_tokens(self.job_dir / "tokens_data.hex")
        ctrl += read_hex_tokens(self.job_dir / "tokens_ctrl.hex")
        for name in ("tokens_data.hex", "tokens_ctrl.hex"):
            (self.job_dir / name).unlink(missing_ok=True)
        await self.fall

    async def run_job(self, job):
        dut = self.dut
        if job.get("backdoor_words") is not None:
            await self.load_image_backdoor(job["backdoor_words"])
        else:
            await self.load_image_file(job["image"])
        await self.write(CSR.PROG_ADDR, 0)
        for w in job["program_words"]:
            await self.write(CSR.PROG_DATA, w)
        await self.write(CSR.PROG_LEN, job["prog_len"])
        for n, a in enumerate(job["args"]):
            await self.write64(csr_arg(n), a)
        await self.write64(CSR.MEM_LIMIT_LO, job["mem_limit"])
        if job.get("watchdog") is not None:
            await self.write(CSR.WATCHDOG, job["watchdog"])
        dut.bp_threshold.value = min(65536, round(job["backpressure"] * 65536))
        dut.seed.value = job["seed"] & 0xFFFF_FFFF
        dut.seed_load.value = 1
        await self.write(CSR.CTRL, 1)
        dut.seed_load.value = 0
        await self.fall                       # the start has cleared DONE
        dut.capture.value = 1

        data, ctrl = [], []
        t0 = time.perf_counter()
        sim0 = cocotb.utils.get_sim_time("ns")
        timeout = False
        deadline = Timer(2 * job["max_cycles"], "ns")
        while True:
            fired = await First(RisingEdge(dut.finished), RisingEdge(dut.cap_full), deadline)
            if fired is deadline:
                timeout = True
                break
            await self.fall
            if dut.cap_full.value:
                await self.dump(data, ctrl)
                continue
            break
        dut.capture.value = 0
        await self.fall
        await self.dump(data, ctrl)
        wall = time.perf_counter() - t0
        sim_cycles = int((cocotb.utils.get_sim_time("ns") - sim0) / 2)

        status = await self.read(CSR.STATUS)
        fault_addr = await self.read64(CSR.FAULT_ADDR_LO)
        counters = {}
        for i, name in enumerate(COUNTERS):
            counters[name] = await self.read64(CSR.COUNTERS + 8 * i)
        mem_stats = []                        # hw.hbm_model.stat_names order
        for i in range(await self.read(CSR.CONFIG3)):
            mem_stats.append(await self.read64(CSR.MEM_STATS + 8 * i))
        return {"data": data, "ctrl": ctrl, "status": status, "fault_addr": fault_addr,
                "counters": counters, "mem_stats": mem_stats, "timeout": timeout,
                "drain_cycles": sim_cycles, "drain_wall": wall}


@cocotb.test()
async def run_jobs(dut):
    job_dir = Path(os.environ["EMBER_RTL_JOB"])
    jobs = json.loads((job_dir / "jobs.json").read_text())
    tb = TB(dut, job_dir)
    await tb.start()
    results = []
    for job in jobs:
        results.append(await tb.run_job(job))
        if results[-1]["timeout"]:
            break
    (job_dir / "results.json").write_text(json.dumps(results))
