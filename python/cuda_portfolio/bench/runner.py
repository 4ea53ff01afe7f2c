"""Runs cases: providers interleaved over rounds, outputs re-validated after timing, one record each.

Per case: every provider is warmed up and prepared (graph captured) first; then each round times
every provider in turn, starting one later each round (ABC, BCA, CAB, ...), so drift in clocks or
temperature spreads over all providers instead of landing on whichever ran last. Each record keeps
the median of every round besides the summary of all samples, so a provider whose speed changes
between rounds (two modes, not one spread) shows it. After timing, the
output of the last timed launch is compared with the float64 reference: a provider that computed
the wrong thing is recorded WRONG, with no throughput and no ratios. The reference op (kind
"reference", softmax only) computes something else and is not validated; it is a peer for the ratios.
"""
from __future__ import annotations

import statistics

import torch

from .case import CONTROL, OURS, PEER, REFERENCE, Case, blockwise_relative_error, relative_error
from .report import time_ratio
from .timing import LaunchTimer, TimingSettings, first_line, input_copies_for, summarize


def base_record(case: Case, provider) -> dict:
    return {"op": case.op, "direction": case.direction, "dtype": str(case.dtype).removeprefix("torch."),
            "shape": list(case.shape), "provider": provider.name, "kind": provider.kind, "plan": provider.plan,
            "resolved_plan": provider.resolved_plan, "config": None, "control_of": provider.control_of,
            "status": provider.status, "reason": provider.reason, "method": None, "method_reason": "",
            "launches_per_sample": None, "input_copies": None, "memory_after_prepare": None, "time_ms": None,
            "bytes": case.bytes,
            "flops": case.flops, "tb_per_s": None, "tflop_per_s": None, "ratio_to_ceiling": None, "ratio_to_peers": {},
            "validation": {"rel_err": None, "tolerance": case.tolerance}}


def rotated_rounds(items: list, rounds: int):
    """Each round's order over `items`: all of them, starting one later each round (ABC, BCA, CAB, ...)."""
    for round_index in range(rounds):
        shift = round_index % max(1, len(items))
        yield items[shift:] + items[:shift]


def run_case(case: Case, settings: TimingSettings, ceilings: dict, timer_factory=LaunchTimer) -> list[dict]:
    """Time every provider of `case`; returns one record per provider (also the ones that cannot run)."""
    copies_n = input_copies_for(case.working_set_bytes, settings.l2_bytes)
    # Our own generator: a failed graph capture leaves torch's default CUDA generator in capture
    # mode (torch does not undo it), and later draws from it fail.
    generator = torch.Generator(device=case.device)
    generator.seed()
    copies = [case.make_inputs(generator) for _ in range(copies_n)]
    records, active = [], []
    for provider in case.providers:
        record = base_record(case, provider)
        records.append(record)
        if provider.status != "ok":
            continue
        record["input_copies"] = copies_n
        try:
            timer = timer_factory([provider.bind(inputs) for inputs in copies], settings)
            timer.prepare()
        except Exception as exc:  # a peer refusing the shape, or our kernel failing: recorded, not raised
            record["status"] = "error" if provider.kind == OURS else "refused"
            record["reason"] = first_line(exc)
            continue
        # What the process holds with this provider ready and the ones before it: the providers' graphs, outputs and
        # pools stay until validation, so a case's memory is the sum of its providers', and memory a case did not give
        # back shows at the next case's first provider (how a failed capture's leak was found: perf log, "Session 70").
        record["memory_after_prepare"] = {"allocated_bytes": torch.cuda.memory_allocated(),
                                          "reserved_bytes": torch.cuda.memory_reserved()}
        active.append((record, timer, [], [], provider))

    for order in rotated_rounds(active, settings.rounds):
        for record, timer, samples, round_medians, _ in order:
            if record["status"] != "ok":
                continue
            try:
                this_round = timer.sample(timer.samples_this_round())
                samples += this_round
                round_medians.append(statistics.median(this_round))
            except Exception as exc:
                record["status"], record["reason"] = "error", first_line(exc)

    references = {}  # whole-tensor cases: one float64 reference per input copy, shared by the providers
    for record, timer, samples, round_medians, provider in active:
        if record["status"] == "ok" and provider.kind != REFERENCE:  # the reference op computes something else
            output, copy_index = timer.last_output()
            if provider.describe is not None:
                try:
                    record["config"] = provider.describe(copies[copy_index])
                except Exception as exc:  # a bug of ours: this record fails, the run's other cases still run
                    record["status"], record["reason"] = "error", f"describing the launch: {first_line(exc)}"
            if case.rows_independent:
                rel_err, problem = blockwise_relative_error(output, case.reference, copies[copy_index])
            else:
                if copy_index not in references:
                    references[copy_index] = case.reference(copies[copy_index])
                rel_err, problem = relative_error(output, references[copy_index])
            record["validation"]["rel_err"] = rel_err if problem == "" else None
            if problem or rel_err > case.tolerance:
                record["status"] = "WRONG"
                record["reason"] = problem or f"rel err {rel_err:.3e} > tolerance {case.tolerance:.0e}"
        record.update(method=timer.method, method_reason=timer.method_reason,
                      launches_per_sample=timer.launches_per_sample)
        if samples:
            record["time_ms"] = summarize(samples) | {"round_medians": round_medians}
        timer.close()
    add_throughput_and_ratios(case, records, ceilings)
    return records


def add_throughput_and_ratios(case: Case, records: list[dict], ceilings: dict) -> None:
    """TB/s or TFLOP/s and the ratios of each ok record: to the copy ceiling (softmax) or, paired by round, to the
    case's cuBLAS (matmul, whose median this appends to ceilings["cublas"]), and to every peer, control and reference
    op (ratio_to_peers[p] = p's time / this record's)."""
    ok = [r for r in records if r["status"] == "ok" and r["time_ms"]]
    peers = [r for r in ok if r["kind"] in (PEER, CONTROL, REFERENCE)]
    cublas = next((r for r in ok if r["provider"] == "cublas"), None) if case.op == "matmul" else None
    if cublas is not None:
        ceilings.setdefault("cublas", []).append(
            {"dtype": cublas["dtype"], "shape": cublas["shape"], "time_ms": cublas["time_ms"]["median"],
             "tflop_per_s": case.flops / (cublas["time_ms"]["median"] * 1e-3) / 1e12})
    copy = ceilings.get("device_copy") or {}
    copy_tbs = copy.get("tb_per_s") if copy.get("status", "ok") == "ok" else None  # a WRONG copy is no ceiling
    for record in ok:
        seconds = record["time_ms"]["median"] * 1e-3
        if case.bytes is not None:
            record["tb_per_s"] = case.bytes / seconds / 1e12
            if copy_tbs:
                record["ratio_to_ceiling"] = record["tb_per_s"] / copy_tbs
        if case.flops is not None:
            record["tflop_per_s"] = case.flops / seconds / 1e12
            if cublas is not None and same_method(cublas, record):
                record["ratio_to_ceiling"] = time_ratio(cublas, record)
        record["ratio_to_peers"] = {p["provider"]: time_ratio(p, record) for p in peers
                                    if p is not record and same_method(p, record)}


def same_method(a: dict, b: dict) -> bool:
    """Two records timed alike (graph replay, or events around single launches): a provider whose capture failed
    falls back to events, whose single cold launches read a few percent apart from graph replays of the same kernel
    (Liger's fp32 4096x4096 backward in 77ef2de's preset, by inference from the shapes beside it), so no ratio is
    taken across the two."""
    return a.get("method") == b.get("method")

