#!/usr/bin/env python3
"""Writes the seed corpus of the build plan fuzzer (tests/executor/build_plan_fuzz.cc): a few
well-formed plans (executor/build_plan.h's layout: header line, JSON, sha256 line) and damaged
variants, so the fuzzer starts past the checksum.

    python3 scripts/build_plan_corpus.py tests/data/executor/build_plan_fuzz_corpus
"""
import hashlib
import json
import os
import sys


def seal(header_and_body: str) -> bytes:
    digest = hashlib.sha256(header_and_body.encode()).hexdigest()
    return (header_and_body + "sha256 " + digest + "\n").encode()


def plan(steps, scales):
    body = {
        "identity": {"tunejit": "0.1.0 (abc1234)", "graph": "a" * 64, "weights": "b" * 64,
                     "mode": "fp16_tensor_cores", "options": "c" * 64, "arch": "sm_90a",
                     "driver_version": 13000, "nvrtc_version": 13000},
        "steps": steps,
        "activation_scales": scales,
        "arena_bytes": 4096,
    }
    return "tunejit build plan 2\n" + json.dumps(body, indent=1) + "\n"


def main(out):
    os.makedirs(out, exist_ok=True)
    conv = {"name": "features.0", "kind": "conv2d", "task_name": "conv2d_nhwc_wgmma.cuda",
            "workload": "[]", "fallback": False, "record": "{}", "record_label": "x.log:1",
            "record_cost": 0.001, "verified": True, "kernels": ["k1", "k2"]}
    untuned = {"name": "pool", "kind": "max_pool2d", "kernels": ["k3"]}
    files = {
        "full.plan": seal(plan([untuned, conv], [0.5, 0.25])),
        "empty_steps.plan": seal(plan([], [])),
        "bad_field.plan": seal(plan([{"name": 1, "kind": "conv2d", "kernels": []}], [])),
        "old_version.plan": seal("tunejit build plan 1\n{}\n"),
        "new_version.plan": seal("tunejit build plan 3\n{}\n"),
        "truncated.plan": seal(plan([conv], []))[:-20],
    }
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
