"""Per-job phase means (us) of the held split_row forward's timeline (session 78, H100 GPU-84032f8d), from the marks in
softmax-split-row-held-timeline-f071cad.json.gz: each block's consecutive jobs (its first 63, the buffer's) as
drawn -> reduced (loads landed, block reduced), -> exchanged (the row's totals in hand), -> done (CUDA: its stores
issued; Triton: the next ticket in hand), -> the next job's drawn. The marks were stored as absolute %globaltimer
floats, so each is rounded to 256 ns (unbiased; a mean over thousands of jobs keeps ~10 ns).

    python results/h100/experiments/softmax-split-row-held-timeline-f071cad-means.py
"""
import gzip
import json
import pathlib
import statistics

data = json.load(gzip.open(pathlib.Path(__file__).with_name("softmax-split-row-held-timeline-f071cad.json.gz")))
print(f"{data['device']}\n| case | backend | slices | span us | load+reduce | exchange | exchanged->done | done->next drawn "
      "| cycle | jobs |\n|---|---|---|---|---|---|---|---|---|---|")
for case in data["cases"]:
    phases = ([], [], [], [])
    for block in case["shortest"]["blocks"]:
        jobs = block["jobs"][:min(block["jobs_run"], 63)]
        for job, following in zip(jobs, jobs[1:]):
            marks = (job["drawn"], job["reduced"], job["exchanged"], job["done"], following["drawn"])
            for values, start, end in zip(phases, marks, marks[1:]):
                values.append((end - start) / 1e3)
    means = [statistics.mean(v) for v in phases]
    print(f"| {case['case']} | {case['backend']} | {case['slices']} | {case['shortest']['analysis']['span_us']:.1f} | "
          + " | ".join(f"{m:.2f}" for m in means) + f" | {sum(means):.2f} | {len(phases[0])} |")
