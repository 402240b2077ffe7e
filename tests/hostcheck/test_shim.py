"""The SDK declaration shim alone (no ATen headers, about a second): it parses as Objective-C++
with PyTorch's MPS flags, and a message to a selector it does not declare is an error."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from metalport.emulate.diagnostics import parse_diagnostics
from metalport.hostcheck.toolchain import MPS_FLAGS, SHIM_DIR, front_end

USES = """\
#include <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>
#include <os/signpost.h>
static MPSGraphTensor* build(MPSGraph* g, MPSGraphTensor* t, id<MTLComputeCommandEncoder> enc,
                             id<MTLComputePipelineState> pso, id<MTLBuffer> buf) {
  @autoreleasepool {
    NSArray<NSNumber*>* shape = @[ @1, @2 ];
    NSMutableDictionary<MPSGraphTensor*, MPSGraphTensorData*>* feeds = [[NSMutableDictionary new] autorelease];
    feeds[t] = [[[MPSGraphTensorData alloc] initWithMTLBuffer:buf shape:shape dataType:MPSDataTypeFloat32] autorelease];
    [enc setComputePipelineState:pso];
    [enc setBuffer:buf offset:0 atIndex:0];
    [enc dispatchThreads:MTLSizeMake(4, 1, 1) threadsPerThreadgroup:MTLSizeMake(pso.maxTotalThreadsPerThreadgroup, 1, 1)];
    MPSGraphTensor* x = [g additionWithPrimaryTensor:t secondaryTensor:t name:nil];
    x = [g selectWithPredicateTensor:[g isNaNWithTensor:x name:nil] truePredicateTensor:t falsePredicateTensor:x name:nil];
    return [g reductionSumWithTensor:x axes:shape name:@"sum"];
  }
}
void run(dispatch_queue_t q) { dispatch_sync(q, ^() { (void)build(nil, nil, nil, nil, nil); }); }
"""


def _compile(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "unit.mm"
    source.write_text(text)
    fe = front_end()
    return subprocess.run([*fe.argv, *MPS_FLAGS, "-isystem", str(SHIM_DIR), *fe.system, "-fsyntax-only", str(source)],
                          capture_output=True, text=True, timeout=300)


def test_the_shim_parses_and_serves_typical_host_code(tmp_path: Path) -> None:
    proc = _compile(tmp_path, USES)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("line", "needle"), [
    ("[enc setComputePipeline:pso];", "setComputePipeline"),  # no such selector
    ("[g additionWithPrimaryTensor:t name:nil];", "additionWithPrimaryTensor"),  # missing argument
])
def test_a_selector_the_sdk_does_not_have_is_an_error_at_its_line(tmp_path: Path, line: str, needle: str) -> None:
    text = USES.replace("    [enc setComputePipelineState:pso];\n", f"    [enc setComputePipelineState:pso];\n    {line}\n")
    proc = _compile(tmp_path, text)
    errors = [d for d in parse_diagnostics(proc.stderr, {}) if d.severity == "error"]
    assert proc.returncode != 0 and errors
    assert errors[0].line == text.splitlines().index(f"    {line}") + 1 and needle in errors[0].message
