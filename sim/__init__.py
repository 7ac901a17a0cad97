"""The simulator: the RTL under Verilator, as the runtime and the testbenches use it.

* ``sim.verilator`` — Verilog generation, the cached Verilator build, running a cocotb module;
* ``sim.system`` — ``run_on_rtl`` / ``run_many_on_rtl``: access programs on the system top
  (``sim/system_top.v`` wrapper, driven by the cocotb module ``sim.system_top``);
* ``sim.hbm`` — ``run_requests_on_rtl``: request traces through the memory model alone
  (``sim/hbm_top.v`` driver);
* ``sim.main_job`` — the main job (``make sim``).
"""
