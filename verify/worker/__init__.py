"""The worker side of the gate: the modules that run inside the isolated worker process.

`python -m warpwise.verify.worker` starts a worker (`__main__`: the JSON-lines protocol loop); `nvbuild` builds a
kernel (NVRTC, nvcc as the fallback), `gpu_job` runs, checks and times both sides of a job, and `device` holds the
GPU helpers (L2 flush, peaks, events). These import only the standard library, numpy/torch, the CUDA bindings,
each other and the plain types of `warpwise.verify.types` (tests/test_layers.py checks it), so a worker starts fast
and a crash in user code takes nothing else down. Everything else in `warpwise.verify` is the parent's side.
"""
