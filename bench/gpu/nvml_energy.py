"""bench/gpu/nvml_energy.py — the GPU's energy over a window, for the Python peers, read as
bench/bench_energy.h reads it for ours: NVML through ctypes (the driver's library, no package),
a thread sampling the board's energy counter and the SM clock every 2 ms, and the energy taken
as the slope between the counter's first and last steps inside the window times the window (the
counter moves in steps, so its plain difference over a short window is off by up to a step).

    meter = EnergyMeter()              # meter.ok is False without NVML: measure() returns None
    r = meter.measure(run, min_s=1.5)  # calls run() back to back for >= min_s seconds
    # r = {"runs", "seconds", "mj_per_run", "watts", "sm_mhz_median"}
"""
import ctypes
import statistics
import threading
import time

NVML_CLOCK_SM = 1


class EnergyMeter:
    def __init__(self, pci_bus_id=None):
        """pci_bus_id "0000:xx:yy.0" (torch's device properties give it), else NVML device 0"""
        self.ok = False
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            return
        self.dev = ctypes.c_void_p()
        if self.lib.nvmlInit_v2() != 0:
            return
        if pci_bus_id:
            rc = self.lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(),
                                                           ctypes.byref(self.dev))
        else:
            rc = self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.dev))
        self.ok = rc == 0 and self._energy() is not None

    def _energy(self):
        mj = ctypes.c_ulonglong()
        return mj.value if self.lib.nvmlDeviceGetTotalEnergyConsumption(
            self.dev, ctypes.byref(mj)) == 0 else None

    def _clock(self):
        mhz = ctypes.c_uint()
        return mhz.value if self.lib.nvmlDeviceGetClockInfo(
            self.dev, NVML_CLOCK_SM, ctypes.byref(mhz)) == 0 else None

    def measure(self, run, min_s=1.5):
        """runs run() back to back for at least min_s seconds; None without NVML or counter steps"""
        if not self.ok:
            return None
        steps, clocks, stop = [], [], threading.Event()
        start = self._energy()

        def sample():
            prev = start
            while not stop.is_set():
                e, c = self._energy(), self._clock()
                if e is not None and e != prev:
                    steps.append((time.perf_counter(), e))
                    prev = e
                if c is not None:
                    clocks.append(c)
                time.sleep(0.002)

        sampler = threading.Thread(target=sample)
        t0 = time.perf_counter()
        sampler.start()
        runs = 0
        while runs == 0 or time.perf_counter() - t0 < min_s:
            run()
            runs += 1
        seconds = time.perf_counter() - t0
        stop.set()
        sampler.join()
        if len(steps) < 2 or steps[-1][0] <= steps[0][0] or not clocks:
            return None
        watts = (steps[-1][1] - steps[0][1]) * 1e-3 / (steps[-1][0] - steps[0][0])
        return {"runs": runs, "seconds": seconds, "mj_per_run": watts * seconds / runs * 1e3,
                "watts": watts, "sm_mhz_median": statistics.median(clocks)}
