import json
import re
import time
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus import facets
from corpus.facets import FACET_KEYS, FEATURE_LABELS, MAX_ITEMS_PER_FACET, issue_facets
from tests.conftest import SAMPLE_ISSUES_FILE

# --- Snippets in the style of the three projects' issue templates ----------------------------

TRANSFORMERS_SYSTEM_INFO = """### System Info

- `transformers` version: 4.36.0
- Platform: Linux-5.15.0-1045-aws-x86_64-with-glibc2.31
- Python version: 3.10.12
- Huggingface_hub version: 0.19.4
- Safetensors version: 0.4.1
- Accelerate version: 0.25.0
- Accelerate config: \tnot found
- PyTorch version (GPU?): 2.1.2+cu121 (True)
- Tensorflow version (GPU?): not installed (NA)
- Flax version (CPU?/GPU?/TPU?): not installed (NA)
- Jax version: not installed
- JaxLib version: not installed
- Using GPU in script?: yes, 8x A100 80GB
- Using distributed or parallel set-up in script?: DeepSpeed ZeRO-3 with CPU offload

### Who can help?

@muellerzr @pacman100

### Reproduction

```python
training_args = TrainingArguments(
    output_dir="out",
    bf16=True,
    fp16=False,
    gradient_checkpointing=True,
    deepspeed="ds_config_zero3.json",
)
```
"""

DEEPSPEED_BUG_REPORT = """**Describe the bug**
Training hangs after the first step with ZeRO stage 2.

**ds_report output**
```
--------------------------------------------------
DeepSpeed C++/CUDA extension op report
--------------------------------------------------
JIT compiled ops requires ninja
ninja .................. [OKAY]
--------------------------------------------------
op name ................ installed .. compatible
--------------------------------------------------
cpu_adam ............... [NO] ....... [OKAY]
fused_adam ............. [NO] ....... [OKAY]
 [WARNING]  async_io requires the dev libaio .so object and headers but these were not found.
DeepSpeed general environment info:
torch install path ............... ['/usr/local/lib/python3.10/dist-packages/torch']
torch version .................... 2.0.1+cu117
deepspeed install path ........... ['/usr/local/lib/python3.10/dist-packages/deepspeed']
deepspeed info ................... 0.9.5, unknown, unknown
torch cuda version ............... 11.7
torch hip version ................ None
nvcc version ..................... 11.7
deepspeed wheel compiled w. ...... torch 2.0, cuda 11.7
```

**System info (please complete the following information):**
 - OS: Ubuntu 20.04
 - GPU count and types [e.g. two machines with x8 A100s each]
 - Python version 3.10.6

**Launcher context**
`deepspeed --num_gpus 4 train.py --deepspeed ds_config.json`

```json
{
  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 1,
  "fp16": {
    "enabled": false
  },
  "bf16": {"enabled": true},
  "zero_optimization": {
    "stage": 2,
    "offload_optimizer": {"device": "none"},
    "contiguous_gradients": true
  }
}
```
"""

MEGATRON_BUG_REPORT = """**Describe the bug**
Loss diverges as soon as sequence parallel is on.

**To Reproduce**
```
torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py \\
    --tensor-model-parallel-size 2 \\
    --pipeline-model-parallel-size 4 \\
    --context-parallel-size 1 \\
    --sequence-parallel \\
    --use-flash-attn \\
    --recompute-granularity selective \\
    --num-layers 32 --hidden-size 4096 --bf16
```
```
using world size: 16, data-parallel size: 2, context-parallel size: 1, \
tensor-model-parallel size: 2, pipeline-model-parallel size: 4
------------------------ arguments ------------------------
  async_tensor_model_parallel_allreduce ........... True
  expert_model_parallel_size ...................... 1
  fp16 ............................................ False
  fp8 ............................................. None
  fp8_margin ...................................... 0
  moe_router_topk ................................. 2
  num_experts ..................................... None
  ddp_bucket_size ................................. None
-------------------- end of arguments ---------------------
```

**Environment (please complete the following information):**
 - Megatron-LM commit ID 1a2b3c4
 - PyTorch version 2.1.0a0+32f93b1
 - CUDA version 12.2
 - NCCL version 2.18.5
"""

OUT_OF_MEMORY_TRACEBACK = """Training crashes at step 0:
```
Traceback (most recent call last):
  File "/workspace/train.py", line 120, in <module>
    main()
  File "/workspace/train.py", line 98, in main
    loss.backward()
  File "/usr/local/lib/python3.10/dist-packages/torch/_tensor.py", line 492, in backward
    torch.autograd.backward(
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB \
total capacity; 75.01 GiB already allocated; 1.50 GiB free)
```
"""

NCCL_TIMEOUT_LOG = """```
[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: \
WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800403 milliseconds \
before timing out.
[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed out. Due to the \
asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted data.
[rank3]: Traceback (most recent call last):
[rank3]:   File "/workspace/train.py", line 10, in <module>
[rank3]:     dist.all_reduce(tensor)
[rank3]: torch.distributed.DistBackendError: NCCL error in: \
../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled cuda error, NCCL version 2.19.3
[rank3]: ncclUnhandledCudaError: Call to CUDA function failed.
```
"""


def versions_of(text: str) -> dict[str, str]:
    return {entry["name"]: entry["version"] for entry in issue_facets("", text)["versions"]}


def gpus_of(text: str) -> list[tuple[int | None, str | None]]:
    return [(entry["count"], entry["model"]) for entry in issue_facets("", text)["gpus"]]


# --- Shape ------------------------------------------------------------------------------------


def test_empty_issue_has_every_key_and_nothing_in_it():
    assert issue_facets("", "") == {key: [] for key in FACET_KEYS}


def test_result_is_json_serialisable_with_the_documented_entry_shapes():
    result = issue_facets("RuntimeError in ZeRO-3", TRANSFORMERS_SYSTEM_INFO, [NCCL_TIMEOUT_LOG])
    assert list(result) == list(FACET_KEYS)
    assert json.loads(json.dumps(result)) == result
    assert all(isinstance(name, str) for name in result["exceptions"])
    assert set(result["features"]) <= set(FEATURE_LABELS)
    assert all(set(entry) == {"name", "version"} for entry in result["versions"])
    assert all(set(entry) == {"count", "model"} for entry in result["gpus"])


def test_missing_texts_are_treated_as_empty():
    assert issue_facets(None, None, [None, "torch==2.1.0"])["versions"] == [  # type: ignore[arg-type]
        {"name": "torch", "version": "2.1.0"}
    ]


# --- Realistic reports ------------------------------------------------------------------------


def test_transformers_system_info_block():
    result = issue_facets("Trainer hangs with DeepSpeed", TRANSFORMERS_SYSTEM_INFO)
    assert result["versions"] == [
        {"name": "transformers", "version": "4.36.0"},
        {"name": "python", "version": "3.10.12"},
        {"name": "accelerate", "version": "0.25.0"},
        {"name": "torch", "version": "2.1.2+cu121"},
    ]
    assert result["gpus"] == [{"count": 8, "model": "A100"}]
    # fp16=False is a switched-off setting, not a use of fp16.
    assert result["features"] == ["ZeRO-3", "offload", "bf16", "activation checkpointing"]
    assert result["systems_mentioned"] == ["deepspeed", "transformers", "accelerate", "pytorch"]
    assert result["exceptions"] == []


def test_deepspeed_ds_report_and_config():
    result = issue_facets("[BUG] hang with ZeRO-2", DEEPSPEED_BUG_REPORT)
    assert result["versions"] == [
        {"name": "torch", "version": "2.0.1+cu117"},
        {"name": "deepspeed", "version": "0.9.5"},
        {"name": "cuda", "version": "11.7"},
        {"name": "python", "version": "3.10.6"},
    ]
    # "fp16": {"enabled": false}, "offload_optimizer": {"device": "none"} and
    # "gradient_accumulation_steps": 1 switch those features off.
    assert result["features"] == ["ZeRO-2", "bf16"]
    # The template's "[e.g. two machines with x8 A100s each]" is not the reporter's hardware.
    assert result["gpus"] == [{"count": 4, "model": None}]
    assert result["exceptions"] == []


def test_megatron_launch_command_and_argument_dump():
    result = issue_facets("[BUG] Loss diverges", MEGATRON_BUG_REPORT)
    assert result["features"] == [
        "sequence parallel",
        "tensor parallel",
        "pipeline parallel",
        "flash attention",
        "activation checkpointing",
        "bf16",
        "data parallel",
    ]
    # Sizes of 1, False and None in the argument dump, and settings that merely contain a feature
    # word (async_tensor_model_parallel_allreduce, fp8_margin, moe_router_topk) do not count.
    for absent in ("context parallel", "expert parallel", "fp16", "fp8", "MoE"):
        assert absent not in result["features"]
    assert result["versions"] == [
        {"name": "torch", "version": "2.1.0a0+32f93b1"},
        {"name": "cuda", "version": "12.2"},
        {"name": "nccl", "version": "2.18.5"},
    ]
    assert result["gpus"] == [{"count": 8, "model": None}]
    assert result["systems_mentioned"] == ["pytorch", "megatron"]


def test_out_of_memory_traceback():
    result = issue_facets("OOM on backward", OUT_OF_MEMORY_TRACEBACK)
    assert result["exceptions"] == ["torch.cuda.OutOfMemoryError"]
    assert result["systems_mentioned"] == ["pytorch"]


def test_nccl_timeout_log():
    result = issue_facets("Hang in all_reduce", NCCL_TIMEOUT_LOG)
    assert result["exceptions"] == [
        "NCCL timeout",
        "torch.distributed.DistBackendError",
        "NCCL error",
        "ncclUnhandledCudaError",
    ]
    assert result["versions"] == [{"name": "nccl", "version": "2.19.3"}]


# --- Exceptions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'",
            ["AttributeError"],
        ),
        ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB", ["RuntimeError"]),
        ("RuntimeError: CUDA error: device-side assert triggered", ["RuntimeError", "CUDA error"]),
        ('  File "x.py", line 3, in f\n    raise ValueError("bad shape")', ["ValueError"]),
        ("E       AssertionError: assert 1 == 2", ["AssertionError"]),
        (
            "[default3]:RuntimeError: Expected all tensors to be on the same device",
            ["RuntimeError"],
        ),
        (
            "worker-1: torch.distributed.DistBackendError: NCCL communicator was aborted",
            ["torch.distributed.DistBackendError"],
        ),
        (
            "/x/torch/utils/checkpoint.py:31: UserWarning: None of the inputs have requires_grad",
            ["UserWarning"],
        ),
        ("> KeyError: 'input_ids'", ["KeyError"]),
        ("The loader fails with `KeyError: 'model'` on load.", ["KeyError"]),
        (
            '^CTraceback (most recent call last):\n  File "a.py", line 1\n'
            "    f()\nKeyboardInterrupt",
            ["KeyboardInterrupt"],
        ),
        ("<pre>ImportError: cannot import name 'X'</pre>", ["ImportError"]),
        ("Segmentation fault (core dumped)", ["Segmentation fault"]),
        ("Exception: Installed CUDA version 12.1 does not match", ["Exception"]),
    ],
)
def test_exception_names_where_python_prints_them(text, expected):
    assert issue_facets("", text)["exceptions"] == expected


@pytest.mark.parametrize(
    "text",
    [
        "I think a RuntimeError happens when the loader is empty.",
        "RuntimeError occurs only with ZeRO-3.",  # prose: no colon after the name
        "we get an error: something about memory",
        "Error: no such file",  # no class name
        "ERROR: Could not build wheels for deepspeed",
        "[WARNING] [stage3.py:1850:step] 4 pytorch allocator cache flushes",
        "attributeerror: lower case is not how Python prints it",
    ],
)
def test_exception_names_in_prose_are_ignored(text):
    assert issue_facets("", text)["exceptions"] == []


def test_traceback_last_line_may_name_any_qualified_class():
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 5, in <module>\n'
        "    model(batch)\n"
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
    )
    assert issue_facets("", text)["exceptions"] == ["torch._dynamo.exc.BackendCompilerFailed"]


def test_traceback_cut_off_mid_name_adds_nothing():
    # As in DeepSpeed #1317 of the sample: the paste ends inside the exception name.
    text = (
        "        Traceback (most recent call last):\n"
        '          File "zero_to_fp32.py", line 366, in <module>\n'
        "            convert_zero_checkpoint_to_fp32_state_dict(args.checkpoint_dir)\n"
        "        ValueErr\n"
    )
    assert issue_facets("", text)["exceptions"] == []


def test_title_names_count_anywhere():
    result = issue_facets('Using `--data-impl cached` breaks with "AttributeError: x"', "")
    assert result["exceptions"] == ["AttributeError"]


def test_exceptions_are_deduplicated_in_order_and_capped():
    lines = [f"Custom{index}Error: failed" for index in range(30)]
    text = "\n".join(["ValueError: first", *lines, "ValueError: again"])
    exceptions = issue_facets("", text)["exceptions"]
    assert exceptions[:3] == ["ValueError", "Custom0Error", "Custom1Error"]
    assert len(exceptions) == MAX_ITEMS_PER_FACET


# --- Features ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("we train with zero stage 3", "ZeRO-3"),
        ("ds-zero3 + offload", "ZeRO-3"),
        ("ZeRO-3 checkpoints", "ZeRO-3"),
        ("ZeRO 2 works", "ZeRO-2"),
        ("--zero-stage 1", "ZeRO-1"),
        ('"zero_optimization": {"stage": 3, "overlap_comm": true}', "ZeRO-3"),
        ("zero_optimization_stage ......... 2", "ZeRO-2"),
        ("deepspeed/runtime/zero/stage3.py", "ZeRO-3"),
        ('"stage3_gather_16bit_weights_on_model_save": true', "ZeRO-3"),
        ("ZeRO-Infinity with NVMe", "ZeRO-Infinity"),
        ("ZeRO++ hpZ", "ZeRO++"),
        ("DeepSpeed-ZeRO vs DeepSpeed-Inference", "ZeRO"),
        ("tensor parallelism", "tensor parallel"),
        ("--tensor-model-parallel-size 4", "tensor parallel"),
        ("TP=2", "tensor parallel"),
        ("tp_size: 8", "tensor parallel"),
        ("TP8PP4 on 64 GPUs", "pipeline parallel"),
        ("mp_size=2 for init_inference", "tensor parallel"),
        ("pipeline_model_parallel_size: 2", "pipeline parallel"),
        ("a pipe_parallel model", "pipeline parallel"),
        ("PipelineModule(layers=layers)", "pipeline parallel"),
        ("--sequence-parallel", "sequence parallel"),
        ("DeepSpeed-Ulysses", "sequence parallel"),
        ("cp=2", "context parallel"),
        ("--expert-model-parallel-size 8", "expert parallel"),
        ("deepspeed.moe.layer.MoE", "MoE"),
        ("Mixtral has num_local_experts: 8", "MoE"),
        ("wrapped in DistributedDataParallel", "data parallel"),
        ("DDP hangs", "data parallel"),
        ("FullyShardedDataParallel", "FSDP"),
        ("distributed_type: FSDP", "FSDP"),
        ("--model-parallel-size 4", "model parallel"),
        ("Megatron3D-Parallelism example", "3D parallel"),
        ('"offload_param": {"device": "nvme"}', "offload"),
        ("ZeRO-Offload", "offload"),
        ("--fp16", "fp16"),
        ("torch_dtype=torch.float16", "fp16"),
        ("torch.bfloat16", "bf16"),
        ("fp8 with Transformer Engine", "fp8"),
        ("with torch.cuda.amp.autocast():", "mixed precision"),
        ("mixed_precision: bf16", "mixed precision"),
        ("model.gradient_checkpointing_enable()", "activation checkpointing"),
        ("--checkpoint-activations", "activation checkpointing"),
        ('"gradient_accumulation_steps": 8', "gradient accumulation"),
        ("LoraConfig(r=8)", "LoRA"),
        ("load_in_8bit=True", "quantization"),
        ('attn_implementation="flash_attention_2"', "flash attention"),
        ("replace_with_kernel_inject=True", "DeepSpeed-Inference"),
        ("model = torch.compile(model)", "torch.compile"),
    ],
)
def test_feature_spellings(text, label):
    assert label in issue_facets("", text)["features"]


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ('"fp16": {\n    "enabled": false\n}', "fp16"),
        ("fp16=False", "fp16"),
        ("  bf16 ............ False", "bf16"),
        ('"offload_optimizer": {"device": "none"}', "offload"),
        ("--tensor-model-parallel-size 1", "tensor parallel"),
        ("tensor_model_parallel_size ....... 1", "tensor parallel"),
        ("tp=1", "tensor parallel"),
        ("TP1", "tensor parallel"),
        ("sequence_parallel ........ False", "sequence parallel"),
        ("mixed_precision: 'no'", "mixed precision"),
        ("gradient_checkpointing=False", "activation checkpointing"),
        ('"gradient_accumulation_steps": 1', "gradient accumulation"),
        ("num_experts ..... None", "MoE"),
        ("fsdp=[]", "FSDP"),
        # Settings that contain a feature's name without switching it.
        ("fsdp_config={'min_num_params': 0}", "FSDP"),
        ("ddp_timeout=1800", "data parallel"),
        ("fp16_backend=auto", "fp16"),
        ("  fp8_amax_history_len ..... 1024", "fp8"),
        ("  moe_router_topk ..... 2", "MoE"),
        ("  async_tensor_model_parallel_allreduce ..... True", "tensor parallel"),
        ("  activation_checkpointing_config  {", "activation checkpointing"),
    ],
)
def test_switched_off_or_incidental_settings_do_not_count(text, label):
    assert label not in issue_facets("", text)["features"]


@pytest.mark.parametrize(
    "text",
    [
        "see https://example.com/TP/PP/dp=4 for details",
        "commit 3fa100c2dpTP8 and sha deadbeef",
        "http and output and cp command",
        "We zero 3 gradients",
        "Tom &amp; Jerry",
        "No module named 'amp_C'",
        "Loran and explorations",
        "a $TP variable",
    ],
)
def test_no_features_from_coincidental_letters(text):
    assert issue_facets("", text)["features"] == []


def test_plain_zero_is_dropped_once_a_stage_is_named():
    assert issue_facets("DeepSpeed ZeRO", "zero_to_fp32.py after zero3 training")["features"] == [
        "ZeRO-3"
    ]


def test_features_in_order_of_first_appearance_across_texts():
    result = issue_facets("bf16 loss spikes", "we use LoRA", ["also with --fp16 and bf16"])
    assert result["features"] == ["bf16", "LoRA", "fp16"]


# --- Versions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name", "version"),
    [
        ("torch==2.1.0", "torch", "2.1.0"),
        ("torch version: 2.0.1+cu118", "torch", "2.0.1+cu118"),
        ("- PyTorch version (GPU?): 2.1.0+cu121 (True)", "torch", "2.1.0+cu121"),
        ("pytorch (2.6.0) checkpoint.load", "torch", "2.6.0"),
        ("deepspeed 0.12.3", "deepspeed", "0.12.3"),
        ("DeepSpeed version: 0.9.2", "deepspeed", "0.9.2"),
        ("- `transformers` version: 4.36.0", "transformers", "4.36.0"),
        ("- `transformers` version:'3.1.0'", "transformers", "3.1.0"),
        ("transformers 4.6.0.dev0", "transformers", "4.6.0.dev0"),
        ("megatron-core==0.5.0", "megatron-core", "0.5.0"),
        ("tried mcore_r0.8.0 and mcore_r0.10.0", "megatron-core", "0.8.0"),
        ("accelerate==0.20.3", "accelerate", "0.20.3"),
        (
            "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |",
            "cuda",
            "12.2",
        ),
        ("cuda 11.8", "cuda", "11.8"),
        ("Cuda compilation tools, release 11.7, V11.7.99", "cuda", "11.7"),
        ("CUDA used to build PyTorch: 12.1", "cuda", "12.1"),
        ("cuDNN version: 8.9.2", "cudnn", "8.9.2"),
        ("NCCL INFO NCCL version 2.18.1+cuda12.1", "nccl", "2.18.1+cuda12.1"),
        ("nvidia-nccl-cu12==2.18.1", "nccl", "2.18.1"),
        ("Python version: 3.10.12 (main, Nov 20 2023)", "python", "3.10.12"),
        ("apex==0.1", "apex", "0.1"),
        ("flash-attn==2.3.3", "flash-attn", "2.3.3"),
        ("flash_attn 2.5.0", "flash-attn", "2.5.0"),
        ("peft==0.7.1", "peft", "0.7.1"),
        ("triton                    2.1.0", "triton", "2.1.0"),
        ("[pip3] torch==2.1.0", "torch", "2.1.0"),
        ("torch version .................... 2.0.1+cu117", "torch", "2.0.1+cu117"),
        ("deepspeed info ................... 0.9.5, unknown, unknown", "deepspeed", "0.9.5"),
        ("torch cuda version ............... 11.7", "cuda", "11.7"),
        ("nvcc version ..................... 11.7", "cuda", "11.7"),
    ],
)
def test_version_spellings(text, name, version):
    assert versions_of(text) == {name: version}


def test_first_mention_of_each_name_wins():
    text = "torch==2.1.0\nupgraded to pytorch 2.2.1, CUDA Version: 12.2 and cuda 11.8"
    assert issue_facets("", text)["versions"] == [
        {"name": "torch", "version": "2.1.0"},
        {"name": "cuda", "version": "12.2"},
    ]


@pytest.mark.parametrize(
    "text",
    [
        "torch>=2.0",  # a constraint, not the installed version
        "sentence-transformers==2.2.2",
        "pytorch-triton==2.1.0",
        "/usr/lib/python3.10/site-packages",
        "device='cuda:0'",
        "torch.Size([50265, 768])",
        "- Python version:\n- PyTorch version (GPU?):",  # an empty template
        "DeepSpeed should accelerate 2.5x",
        "transformers-cli env",
    ],
)
def test_no_version_without_one(text):
    assert issue_facets("", text)["versions"] == []


# --- GPUs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8x A100", [(8, "A100")]),
        ("8 x A100 80GB", [(8, "A100")]),
        ("GPU: 8*H100", [(8, "H100")]),
        ("4 V100", [(4, "V100")]),
        ("2 GPUs", [(2, None)]),
        ("nproc_per_node=8", [(8, None)]),
        ("--nproc-per-node=8", [(8, None)]),
        ("--num_gpus 4", [(4, None)]),
        ("Number of GPUs: 8", [(8, None)]),
        ("GPUS_PER_NODE=8", [(8, None)]),
        ("CUDA_VISIBLE_DEVICES=0,1,2,3 python train.py", [(4, None)]),
        ("RTX 3090", [(None, "RTX 3090")]),
        ("NVIDIA GeForce RTX3090 Ti", [(None, "RTX 3090 Ti")]),
        ("2x3090", [(2, "RTX 3090")]),
        ("GPU 0: NVIDIA A100-SXM4-80GB", [(None, "A100")]),
        ("A100-80G*8", [(8, "A100")]),
        ("RTX A6000", [(None, "A6000")]),
        ("Tesla T4", [(None, "T4")]),
        ("L40S", [(None, "L40S")]),
        ("AMD MI250X", [(None, "MI250")]),
        ("Ascend 910B", [(None, "Ascend 910B")]),
        ("two machines with x8 A100s each", [(8, "A100")]),
        ("I have 2 RTX3090 machines", [(None, "RTX 3090")]),  # 2 machines, not 2 GPUs
        ("8 GPUs ... later nproc_per_node=8 and 8x H100", [(8, "H100")]),
        ("hash 3fa100c2, t4 and l4 in lower case, GPU 0; 79.15 GiB", []),
    ],
)
def test_gpu_setups(text, expected):
    assert gpus_of(text) == expected


# --- Systems ----------------------------------------------------------------------------------


def test_systems_in_order_of_first_mention():
    result = issue_facets("Megatron-LM checkpoint", "converted with transformers, ran torchrun")
    assert result["systems_mentioned"] == ["megatron", "transformers", "pytorch"]


@pytest.mark.parametrize(
    ("text", "mentions_accelerate"),
    [
        ("accelerate launch train.py", True),
        ("from accelerate import Accelerator", True),
        ("accelerator.save_state() fails", True),
        ("while i use accelerate and fsdp", True),
        ("this would accelerate training a lot", False),
        ("Accelerated computing", False),
    ],
)
def test_accelerate_the_library_not_the_verb(text, mentions_accelerate):
    assert ("accelerate" in issue_facets("", text)["systems_mentioned"]) is mentions_accelerate


def test_sentence_transformers_is_not_transformers():
    assert issue_facets("", "pip install sentence-transformers")["systems_mentioned"] == []


# --- The sample issues ------------------------------------------------------------------------


def sample_issue_facets() -> dict[tuple[str, int], dict]:
    results = {}
    for line in SAMPLE_ISSUES_FILE.read_text().splitlines():
        record = json.loads(line)
        comments = [comment.get("body") or "" for comment in record.get("comments_data") or []]
        repository = record["repository_url"].rsplit("/", 1)[-1]
        facets_ = issue_facets(record["title"], record.get("body") or "", comments)
        results[repository, record["number"]] = facets_
    return results


def test_every_sample_issue_gives_well_formed_facets():
    results = sample_issue_facets()
    assert len(results) == 45
    for result in results.values():
        assert list(result) == list(FACET_KEYS)
        assert json.loads(json.dumps(result)) == result
        assert all(len(values) <= MAX_ITEMS_PER_FACET for values in result.values())
    assert sum(bool(result["exceptions"]) for result in results.values()) >= 5
    assert sum(bool(result["versions"]) for result in results.values()) >= 8


def test_facts_of_particular_sample_issues():
    results = sample_issue_facets()

    deepspeed_adam = results["DeepSpeed", 7061]
    assert deepspeed_adam["exceptions"] == ["AttributeError"]
    assert deepspeed_adam["features"] == ["ZeRO-3", "offload"]
    assert deepspeed_adam["versions"] == [{"name": "deepspeed", "version": "0.16.4"}]
    assert deepspeed_adam["gpus"] == [{"count": None, "model": "Ascend 910B"}]

    t5_fp16 = results["transformers", 11461]
    assert t5_fp16["versions"] == [
        {"name": "transformers", "version": "4.6.0.dev0"},
        {"name": "python", "version": "3.7.3"},
        {"name": "torch", "version": "1.8.1+cu111"},
    ]
    assert t5_fp16["features"] == ["fp16"]

    torch_six = results["Megatron-LM", 293]
    assert torch_six["exceptions"] == ["ModuleNotFoundError"]
    assert torch_six["versions"] == [{"name": "torch", "version": "2.0"}]

    no_dist = results["Megatron-LM", 4457]
    assert no_dist["exceptions"] == ["TypeError"]
    assert no_dist["versions"] == [{"name": "torch", "version": "2.6.0"}]
    assert no_dist["gpus"] == [{"count": 8, "model": None}]

    # "tp=1 pp=1 dp=4 cp=1": only data parallel is in use, context parallel is the subject.
    loss_scaling = results["Megatron-LM", 673]
    assert loss_scaling["features"] == ["context parallel", "data parallel"]
    assert loss_scaling["versions"] == [{"name": "megatron-core", "version": "0.8.0"}]

    # "data-parallel-size: 1, tensor-model-parallel size: 1, pipeline-model-parallel size: 1"
    assert results["Megatron-LM", 82]["features"] == ["fp16"]

    assert results["DeepSpeed", 579]["gpus"] == [
        {"count": None, "model": "RTX 3090"},
        {"count": 4, "model": None},
    ]
    assert results["DeepSpeed", 1317]["exceptions"] == []  # the traceback is cut off
    assert results["Megatron-LM", 378]["exceptions"] == ["AttributeError"]

    fsdp_save = results["transformers", 25397]
    assert fsdp_save["features"] == ["FSDP"]
    assert fsdp_save["versions"] == [{"name": "accelerate", "version": "0.20.3"}]
    assert "accelerate" in fsdp_save["systems_mentioned"]


# --- Hostile and arbitrary input --------------------------------------------------------------

LOG_LIKE_PIECES = st.sampled_from(
    [
        "a", "Z", "0", "1", " ", "\t", "\n", "_", "-", ".", ":", "=", "x", "*", "`", "'", '"', "[",
        "]", "(", ")", "<", ">", "&", ";", "/", "\\", "\x00", "\u0130", "\u00d7", "ZeRO-", "stage",
        "Traceback (most recent call last):\n", '  File "x"\n', "RuntimeError: ", "Error", "torch ",
        "==", "2.1.0", "A100", "8x ", "GPUs", "tp", "TP", "=1", " ...... ", "fp16",
        '{"enabled": false}', "--tensor-model-parallel-size ", "CUDA error: ", "nproc_per_node=",
        "CUDA_VISIBLE_DEVICES=", "https://", "[e.g. ", "raise ", "E   ", "[rank0]: ",
    ]
)  # fmt: skip
LOG_LIKE_TEXT = st.lists(LOG_LIKE_PIECES, max_size=80).map("".join)


def assert_well_formed(result: dict) -> None:
    assert list(result) == list(FACET_KEYS)
    json.dumps(result)
    for values in result.values():
        assert len(values) <= MAX_ITEMS_PER_FACET
        as_json = [json.dumps(value, sort_keys=True) for value in values]
        assert len(as_json) == len(set(as_json))


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(), st.lists(st.text(), max_size=3))
def test_arbitrary_text_never_raises(title, body, comments):
    assert_well_formed(issue_facets(title, body, comments))


@settings(max_examples=300, deadline=None)
@given(LOG_LIKE_TEXT, LOG_LIKE_TEXT, st.lists(LOG_LIKE_TEXT, max_size=3))
def test_log_like_text_never_raises(title, body, comments):
    assert_well_formed(issue_facets(title, body, comments))


def test_hostile_input_never_raises():
    hostile = [
        "\x00" * 10_000,
        "Runtime\x00Error: x\x00\nTraceback (most recent call last):\x00\n"
        '  File "x"\nValueError: y',
        "<script>alert(1)</script><details><summary>RuntimeError: x</summary>" * 1_000,
        "[" * 100_000,
        "<" * 100_000,
        "\u0130" * 10_000 + "torch==2.1.0",
        "\ud800 lone surrogate torch==2.1.0",
        "x" * 300_000 + "\nRuntimeError: at the end",
    ]
    for text in hostile:
        assert_well_formed(issue_facets(text, text, [text]))
    # NUL bytes inside a name are dropped before scanning.
    assert issue_facets("", hostile[1])["exceptions"] == ["RuntimeError", "ValueError"]
    # The tail of a long text is read too: logs end with the exception that stopped them.
    assert issue_facets("", hostile[-1])["exceptions"] == ["RuntimeError"]


# --- Time -------------------------------------------------------------------------------------

FRAME = (
    '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/zero/stage3.py", '
    "line 1234, in step\n    self._optimizer_step(sub_group_id)\n"
)
ONE_MB_TRACEBACK = (
    "Traceback (most recent call last):\n" + FRAME * (1_000_000 // len(FRAME))
) + "torch.cuda.OutOfMemoryError: CUDA out of memory.\n"
ONE_MB_LINE = "a" * 1_000_000


def seconds_for(title: str, body: str, comments: list[str]) -> float:
    start = time.perf_counter()
    issue_facets(title, body, comments)
    return time.perf_counter() - start


@pytest.mark.parametrize("body", [ONE_MB_TRACEBACK, ONE_MB_LINE], ids=["traceback", "long-line"])
def test_one_megabyte_body_takes_well_under_a_second(body):
    assert seconds_for("title", body, []) < 1.0


@pytest.mark.parametrize("body", [ONE_MB_TRACEBACK, ONE_MB_LINE], ids=["traceback", "long-line"])
def test_hundreds_of_long_comments_stay_within_the_issue_budget(body):
    # 1 MB of body and 1 MB of comments; about half a second here, bounded by ISSUE_CHARS.
    assert seconds_for("title", body, [body[:5_000]] * 200) < 3.0


def test_traceback_at_the_end_of_a_one_megabyte_body_is_found():
    assert issue_facets("", ONE_MB_TRACEBACK)["exceptions"] == ["torch.cuda.OutOfMemoryError"]


@pytest.mark.parametrize(
    "body",
    [
        ONE_MB_LINE,
        ONE_MB_TRACEBACK,
        "RuntimeError " * 80_000,
        "A100 x " * 140_000,
        "[e.g. " * 200_000,
        "zero_" * 200_000,
    ],
    ids=["a", "traceback", "error-names", "gpu-models", "brackets", "identifier"],
)
def test_scanning_time_grows_linearly_without_the_size_caps(body, monkeypatch):
    # The caps keep imports fast; the patterns themselves must not backtrack quadratically,
    # which on 1 MB would take minutes rather than the second or so a linear scan takes.
    monkeypatch.setattr(facets, "HEAD_CHARS", 10**9)
    monkeypatch.setattr(facets, "ISSUE_CHARS", 10**9)
    monkeypatch.setattr(facets, "LINE_CHARS", 10**9)
    assert seconds_for("", body, []) < 5.0


# --- Shortcuts --------------------------------------------------------------------------------


def facets_read_in_full(title: str, body: str, comments: list[str]) -> dict:
    """`issue_facets` with its shortcuts off: every rule tried on every text, every line read."""
    everything = re.compile("")
    with mock.patch.multiple(
        facets,
        _hints_in=lambda lowered, among=None: frozenset(facets._HINTS),
        _EXCEPTION_HINT=everything,
        _ERROR_KIND_HINT=everything,
        _DIGIT=everything,
    ):
        return issue_facets(title, body, comments)


SHORTCUT_PIECES = st.sampled_from(
    [
        *("a", "Z", "0", "7", " ", "\n", "_", "-", ".", ":", "=", "x", '"', "(", "/", "\u00d7"),
        *("tp", "TP", "PP8", "dp_size", "sp", "ep", "mp_size", "cp", "ZeRO", "zero_stage=3"),
        *("paralle", "pipeline", "ulysses", "MoE", "experts", "ddp", "fsdp", "offload", "fp8"),
        *("bfloat16", "amp", "autocast", "gradient_checkpointing", "grad_accum", "QLoRA", "awq"),
        *("load_in_4bit", "flash_attn", "init_inference", "torch.compile", "inductor"),
        *("torch", "pytorch", "deepspeed", "deep speed", "ds_report", "megatron", "mcore"),
        *("transformers", "accelerate", "python", "apex", "peft", "triton", "cuda", "nvcc"),
        *("cudnn", "nccl", "NCCL", "2.1.0", "version", " ...... ", "Titan V", "gaudi2", "A100"),
        *("8x ", "GPUs", "CUDA error: ", "cuDNN error: ", "NCCL timeout", "Watchdog caught"),
        *("Segmentation fault", "SIGSEGV", "ncclInternalError", "RuntimeError: ", "Warning"),
        *("KeyboardInterrupt", "StopIteration", "raise ", "Traceback (most recent call last):\n"),
        *('  File "x"\n', "https://", "[e.g. ", "\u0130"),
    ]
)
SHORTCUT_TEXT = st.lists(SHORTCUT_PIECES, max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(SHORTCUT_TEXT, SHORTCUT_TEXT, st.lists(SHORTCUT_TEXT, max_size=3))
def test_shortcuts_find_what_reading_in_full_finds(title, body, comments):
    # The hints that spare most texts most patterns must hold for every spelling they stand for.
    assert issue_facets(title, body, comments) == facets_read_in_full(title, body, comments)


def test_shortcuts_find_what_reading_in_full_finds_in_the_samples_and_snippets():
    snippets = [
        TRANSFORMERS_SYSTEM_INFO,
        DEEPSPEED_BUG_REPORT,
        MEGATRON_BUG_REPORT,
        OUT_OF_MEMORY_TRACEBACK,
        NCCL_TIMEOUT_LOG,
    ]
    issues = [("", snippet, []) for snippet in snippets] + [
        (snippet.splitlines()[1], "", snippets) for snippet in snippets
    ]
    for line in SAMPLE_ISSUES_FILE.read_text().splitlines():
        record = json.loads(line)
        comments = [comment.get("body") or "" for comment in record.get("comments_data") or []]
        issues.append((record["title"], record.get("body") or "", comments))
    for title, body, comments in issues:
        assert issue_facets(title, body, comments) == facets_read_in_full(title, body, comments)


def test_every_version_spelling_holds_a_version_hint():
    for pattern in facets._VERSION_NAME_PATTERNS.values():
        for spelling in pattern.split("|"):
            literal = re.sub(r"\[[^\]]*\]\??|\(\?:py\)\?|,\?|\[0-9\]|[?\s]", "", spelling)
            assert any(hint in literal for hint in facets._VERSION_HINTS), spelling


@settings(max_examples=400, deadline=None)
@given(SHORTCUT_TEXT)
def test_finders_and_line_finders_find_what_the_patterns_find(text):
    # The feature rules with finders, and the patterns read only on some lines, must find every
    # match that a plain scan finds, at the same places.
    lowered = text.replace("\u0130", "i").lower()
    for rule in facets._FEATURE_RULES:
        if rule.finder is not None:
            scanned = text if rule.case_sensitive else lowered
            plain = [match.span() for match in rule.pattern.finditer(scanned)]
            assert [match.span() for match in rule.matches(text, lowered)] == plain
    plain = [match.span() for match in facets._VERSION.finditer(lowered)]
    located = facets._matches_in_lines(facets._VERSION, lowered, facets._VERSION_NUMBER)
    assert [match.span() for match in located] == plain
    if not any(word in lowered for word in facets._GPU_WORDS):
        plain = [match.span() for match in facets._GPUS.finditer(lowered)]
        located = facets._matches_in_lines(facets._GPUS, lowered, facets._GPU_NUMBER)
        assert [match.span() for match in located] == plain
