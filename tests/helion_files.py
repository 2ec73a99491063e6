"""Render minimal but realistic Helion repo files for test worlds.

Why: the culprit stage reads `benchmarks/run.py` (the `KERNEL_MAPPINGS` literal) and
`.github/workflows/benchmark_dispatch.yml` (kernel defaults, runner labels, images) from a
real git history. Synthetic worlds plant method and runner changes by committing these files
rendered with different arguments, so the text must have the same shape as Helion's own files
(an annotated dict literal of tuples with an optional args dict; ``workflow_dispatch`` inputs
with ``default: "a,b,c"`` strings; jobs calling ``benchmark.yml`` with ``runner:``/``alias:``).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

RUN_PY_PATH = "benchmarks/run.py"
DISPATCH_PATH = ".github/workflows/benchmark_dispatch.yml"
PRETUNED_DISPATCH_PATH = ".github/workflows/benchmark_pretuned_dispatch.yml"

# Input names that list the kernels a platform runs (see the dashboard notes).
KERNEL_INPUTS = ("kernels", "kernels_cute", "kernels_tpu", "kernels_tpu_bridge", "kernels_linattn")

DEFAULT_RUNNERS: dict[str, str] = {
    "h100": "linux.aws.h100",
    "b200": "linux.dgx.b200",
    "b200_cute": "linux.dgx.b200",
    "mi350x": "linux.rocm.gpu.gfx950.1",
    "tpu": "linux.google.tpu.v6e.1",
}

DEFAULT_IMAGES: dict[str, str] = {
    "h100": "nvidia/cuda:12.9.1-devel-ubuntu24.04",
    "b200": "nvidia/cuda:12.9.1-devel-ubuntu24.04",
    "b200_cute": "nvidia/cuda:12.9.1-devel-ubuntu24.04",
    "mi350x": "rocm/dev-ubuntu-24.04:7.0-complete",
    "tpu": "us-docker.pkg.dev/cloud-tpu-images/python:3.12",
}

DEFAULT_RUNTIMES: dict[str, str] = {
    "h100": "cu129",
    "b200": "cu129",
    "b200_cute": "cu129",
    "mi350x": "rocm7.0",
    "tpu": "cpu",
}

_RUN_PY_HEAD = '''"""Performance comparison between Helion, torch.compile, Triton, and PyTorch eager via TritonBench.

Usage:
$ python benchmarks/run.py [tritonbench args...] [--kernel <kernel_name(s)>]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

# Maximum number of inputs to use
MAX_NUM_INPUTS = 20


def is_cuda() -> bool:
    return torch.version.cuda is not None


# Maps tritonbench op names to Helion kernel examples
# Format options:
#   - Single kernel: (tritonbench_module, helion_module, helion_func)
#   - Single kernel with args: (tritonbench_module, helion_module, helion_func, args_dict)
# pyrefly: ignore [bad-assignment]
KERNEL_MAPPINGS: dict[str, tuple[str, ...]] = {
    # <tritonbench_op_name>: (<tritonbench_module_path>, <helion_kernel_module_path>, <helion_kernel_function_name>)
'''

_RUN_PY_TAIL = '''}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernel", "--op", type=str, default=None)
    args, tritonbench_args = parser.parse_known_args()
    kernels = args.kernel.split(",") if args.kernel else list(KERNEL_MAPPINGS)
    for name in kernels:
        mapping = KERNEL_MAPPINGS[name]
        print(name, mapping[0], file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("HELION_BENCHMARK_DISABLE_LOGGING", "0")
    main()
'''


def _op_base(kernel: str) -> str:
    return kernel.split("-", 1)[0]


def _py(value: Any) -> str:
    """A Python literal for a JSON-like value (strings in double quotes, like the real file)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_py(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_py(k)}: {_py(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot render {type(value).__name__} in KERNEL_MAPPINGS")


def render_run_py(mappings: Mapping[str, Mapping[str, Any]]) -> str:
    """`benchmarks/run.py` text whose ``KERNEL_MAPPINGS`` has one entry per kernel.

    ``mappings[kernel]`` is the entry's args dict, e.g. ``{"num_inputs": 5,
    "remove_flags": ["--cudagraph"]}``; an empty dict renders the 3-tuple form.
    """
    lines = [_RUN_PY_HEAD]
    for kernel, args in mappings.items():
        base = _op_base(kernel)
        lines.append(f"    {json.dumps(kernel)}: (\n")
        lines.append(f'        "tritonbench.operators.{base}.operator",\n')
        lines.append(f'        "examples.{base}",\n')
        lines.append(f'        "{base}_tritonbench",\n')
        if args:
            lines.append("        {\n")
            for key, value in args.items():
                lines.append(f"            {json.dumps(key)}: {_py(value)},\n")
            lines.append("        },\n")
        lines.append("    ),\n")
    lines.append(_RUN_PY_TAIL)
    return "".join(lines)


def _input_block(name: str, kernels: Sequence[str], what: str) -> str:
    csv = ",".join(kernels)
    return (
        f"      {name}:\n"
        f'        description: "Comma-separated kernels to run {what}"\n'
        f"        required: false\n"
        f"        type: string\n"
        f'        default: "{csv}"\n'
    )


_JOB_KERNEL_INPUTS = {
    "h100": "${{ inputs.kernels }}",
    "b200": "${{ inputs.kernels }}",
    "b200_cute": "${{ inputs.kernels_cute }}",
    "mi350x": "${{ inputs.kernels }}",
    "tpu": "${{ inputs.kernels_tpu }},${{ inputs.kernels_tpu_bridge }}",
}


def _with(runner: str, image: str, runtime: str, alias: str) -> list[str]:
    """The start of a job's `with:` block, the same for the main and the linattn jobs."""
    return [
        "    with:\n",
        f"      runner: {runner}\n",
        '      python-version: "3.12"\n',
        f"      image: {image}\n",
        f"      runtime-version: {runtime}\n",
        f"      alias: {alias}\n",
    ]


def _job(platform: str, runner: str, image: str, runtime: str) -> str:
    alias, _, backend = platform.partition("_")
    job = platform.replace("_", "-")
    lines = [
        f"  benchmark-{job}:\n",
        f"    if: ${{{{ inputs.run_{platform} }}}}\n",
        "    uses: ./.github/workflows/benchmark.yml\n",
        "    permissions:\n",
        "      id-token: write\n",
        "      contents: read\n",
        *_with(runner, image, runtime, alias),
    ]
    if backend:
        lines.append(f"      backend: {backend}\n")
    kernels_expr = _JOB_KERNEL_INPUTS.get(platform, "${{ inputs.kernels }}")
    lines.append(f'      kernels: "{kernels_expr}"\n')
    lines.append("      env-vars: ${{ inputs.env_vars }}\n")
    if platform in ("h100", "b200"):
        lines.append(f"  benchmark-{job}-linattn:\n")
        lines += [
            f"    if: ${{{{ inputs.run_{platform} }}}}\n",
            "    uses: ./.github/workflows/benchmark.yml\n",
            *_with(runner, image, runtime, alias),
            '      kernels: "${{ inputs.kernels_linattn }}"\n',
            "      baseline-label: fla\n",
        ]
    return "".join(lines)


def render_dispatch_yml(
    kernels: Mapping[str, Sequence[str]],
    runners: Mapping[str, str],
    *,
    images: Mapping[str, str] | None = None,
    runtime_versions: Mapping[str, str] | None = None,
) -> str:
    """`.github/workflows/benchmark_dispatch.yml` text.

    ``kernels`` maps input names (``KERNEL_INPUTS``) to the kernel list in that input's
    ``default:``; ``runners`` maps platform_short to its runner label (one job per platform,
    plus a linear-attention job for h100/b200). ``images``/``runtime_versions`` override the
    CUDA/ROCm container image and wheel runtime per platform (toolchain changes).
    """
    unknown = set(kernels) - set(KERNEL_INPUTS)
    if unknown:
        raise ValueError(f"unknown kernel inputs: {sorted(unknown)}")
    imgs = {**DEFAULT_IMAGES, **(images or {})}
    rts = {**DEFAULT_RUNTIMES, **(runtime_versions or {})}
    out = [
        "name: Benchmark Dispatch\n",
        "\n",
        "on:\n",
        "  workflow_dispatch:\n",
        "    inputs:\n",
    ]
    for platform in runners:
        out.append(
            f"      run_{platform}:\n"
            f'        description: "Run the {platform} benchmarks"\n'
            "        required: false\n"
            "        type: boolean\n"
            "        default: false\n"
        )
    what = {
        "kernels": "on h100, b200 and mi350x",
        "kernels_cute": "on b200 with the CuTe backend",
        "kernels_tpu": "on TPU",
        "kernels_tpu_bridge": "on TPU through the torch_tpu bridge",
        "kernels_linattn": "for linear attention on h100 and b200",
    }
    for name in KERNEL_INPUTS:
        if name in kernels:
            out.append(_input_block(name, kernels[name], what[name]))
    out.append(
        "      env_vars:\n"
        '        description: "Extra environment variables (KEY=VALUE, space separated)"\n'
        "        required: false\n"
        "        type: string\n"
        '        default: ""\n'
    )
    out += ["\n", "jobs:\n"]
    for platform, label in runners.items():
        out.append(_job(platform, label, imgs.get(platform, "ubuntu:24.04"), rts.get(platform, "cpu")))
        out.append("\n")
    return "".join(out)


def render_pretuned_dispatch_yml(runners: Mapping[str, str]) -> str:
    """`.github/workflows/benchmark_pretuned_dispatch.yml` text: the pretuned suite's own machines
    (as in the real repo, a job per GPU alias calling benchmark_pretuned.yml), ``runners`` maps
    platform_short to its runner label."""
    out = ["name: Pretuned Benchmark Dispatch\n", "\n", "on:\n", "  workflow_dispatch:\n", "\n", "jobs:\n"]
    for platform, label in runners.items():
        out += [
            f"  pretuned-{platform}:\n",
            "    uses: ./.github/workflows/benchmark_pretuned.yml\n",
            "    with:\n",
            f"      runner: {label}\n",
            f"      alias: {platform}\n",
            "\n",
        ]
    return "".join(out)
