"""Hardware of the DAE embedding engine (Amaranth 0.5).

``hw.tmu``        the access unit (decoder, traversal, marshaling, reorder buffer)
``hw.core_if``    control/status registers, program load, output queues
``hw.hbm_model``  the memory model (simulation only)
``hw.system``     the top level that Verilator builds
"""

import time as _time

#: When this process imported ``hw`` (seconds since the epoch): a source file of ``hw/`` changed
#: later is not the code this process elaborates (``sim.verilator.cached_build`` checks it).
IMPORTED_AT = _time.time()

