#!/usr/bin/env python3
"""Gloo's event loop on a rank pinned to one CPU: all-reduce latency with the loop at the default
policy and at SCHED_IDLE (what harness/dist/comm.cpp does), with and without busy processes.

Gloo's TCP device serves its sockets from one epoll thread. When data arrives while a
ProcessGroupGloo worker holds the pair's lock, the loop's handler try-locks, fails, and epoll
(level-triggered) reports the same socket at once: the loop spins on the CPU the lock holder needs
until the scheduler's next tick. This bench shows it outside Lockstep, with PyTorch's own c10d.

usage: bench/gloo-loop.py [--iters N] [--numel N] [--busy K] [--unpinned]
  prints one line per policy: wall time and all-reduce latency (mean, P50, P90, max) on rank 0.
  --busy K: K busy processes, one per CPU (round robin), for the whole measurement.
needs: Debian's python3-torch (torch.distributed with Gloo).
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

# epoll_wait, epoll_pwait, epoll_pwait2 on x86-64: the loop's thread is the one blocked in one.
EPOLL_SYSCALLS = {"232", "281", "441"}


def idle_loop_threads():
    """Sets every thread of this process blocked in epoll (Gloo's loop) to SCHED_IDLE."""
    n = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/syscall") as f:
                nr = f.read().split()[0]
        except OSError:
            continue
        if nr in EPOLL_SYSCALLS:
            os.sched_setscheduler(int(tid), os.SCHED_IDLE, os.sched_param(0))
            n += 1
    return n


def rank_main(a):
    import torch
    import torch.distributed as dist

    if not a.unpinned:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[a.rank % os.cpu_count()]})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=a.rank,
                            world_size=2)
    buf = torch.randn(a.numel)
    w = torch.randn(256, 256)
    dist.all_reduce(buf)
    time.sleep(0.2)  # every thread of Gloo's now parked where it waits
    if a.policy == "idle" and idle_loop_threads() == 0:
        sys.exit("gloo-loop: no thread blocked in epoll found")
    lat = []
    t_start = time.perf_counter()
    for _ in range(a.iters):
        for _ in range(12):  # ~10 ms of compute between collectives, like a step
            w = torch.tanh(w @ w * 1e-3)
        t0 = time.perf_counter()
        dist.all_reduce(buf)
        lat.append((time.perf_counter() - t0) * 1e3)
        buf.mul_(0.5)
    wall = time.perf_counter() - t_start
    if a.rank == 0:
        s = sorted(lat)
        print(f"{a.policy:7s} wall {wall:6.2f} s  all-reduce ms: mean {statistics.mean(s):7.3f} "
              f"P50 {s[len(s) // 2]:7.3f} P90 {s[9 * len(s) // 10]:7.3f} max {s[-1]:8.3f}",
              flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--numel", type=int, default=235530)  # the tiny model's gradient bucket
    p.add_argument("--busy", type=int, default=0)
    p.add_argument("--unpinned", action="store_true")
    p.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    p.add_argument("--policy", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.rank is not None:
        return rank_main(a)
    cpus = sorted(os.sched_getaffinity(0))
    hogs = []
    for k in range(a.busy):
        h = subprocess.Popen(["sh", "-c", "while :; do :; done"])
        os.sched_setaffinity(h.pid, {cpus[k % len(cpus)]})
        hogs.append(h)
    try:
        print(f"2 ranks, {a.numel * 4 / 1e6:.2f} MB all-reduce, {a.iters} iterations, "
              f"{'unpinned' if a.unpinned else 'a rank per CPU'}, {a.busy} busy processes",
              flush=True)
        for policy in ("default", "idle"):
            port = free_port()
            base = [sys.executable, __file__, "--iters", str(a.iters), "--numel", str(a.numel),
                    "--policy", policy, "--port", str(port)] + (["--unpinned"] if a.unpinned else [])
            kids = [subprocess.Popen(base + ["--rank", str(r)])
                    for r in (1, 0)]
            for k in kids:
                k.wait(timeout=600)
    finally:
        for h in hogs:
            h.kill()


if __name__ == "__main__":
    main()
