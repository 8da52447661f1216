"""The availability and version flags of Lightning's ``utilities.imports`` modules
(``_IS_WINDOWS``, ``_TORCH_GREATER_EQUAL_2_3``...) and of its optional-library modules
(``_BITSANDBYTES_AVAILABLE``), which libraries import to decide what to run. Each is computed
here as Lightning computes it, so the answer describes this environment."""

from __future__ import annotations

import operator
import platform
import sys

from lightning_utilities.core.imports import RequirementCache, compare_version

IS_WINDOWS = platform.system() == "Windows"
PYTHON_GREATER_EQUAL_3_10_0 = sys.version_info[:2] >= (3, 10)
PYTHON_GREATER_EQUAL_3_11_0 = sys.version_info[:2] >= (3, 11)
NUMPY_AVAILABLE = RequirementCache("numpy")
BITSANDBYTES_AVAILABLE = RequirementCache("bitsandbytes")
DEEPSPEED_AVAILABLE = RequirementCache("deepspeed")
TORCH_GREATER_EQUAL_2_2 = compare_version("torch", operator.ge, "2.2.0")
TORCH_GREATER_EQUAL_2_3 = compare_version("torch", operator.ge, "2.3.0")
TORCH_EQUAL_2_4_0 = compare_version("torch", operator.eq, "2.4.0")
TORCH_GREATER_EQUAL_2_4 = compare_version("torch", operator.ge, "2.4.0")
TORCH_GREATER_EQUAL_2_4_1 = compare_version("torch", operator.ge, "2.4.1")
TORCH_GREATER_EQUAL_2_5 = compare_version("torch", operator.ge, "2.5.0")
TORCH_GREATER_EQUAL_2_6 = compare_version("torch", operator.ge, "2.6.0")
TORCH_LESS_EQUAL_2_6 = compare_version("torch", operator.le, "2.6.0")
TORCH_GREATER_EQUAL_2_8 = compare_version("torch", operator.ge, "2.8.0")
TORCH_EQUAL_2_8 = RequirementCache("torch>=2.8.0,<2.9.0")
TORCH_EQUAL_2_9 = RequirementCache("torch>=2.9.0,<2.10.0")
TORCHMETRICS_GREATER_EQUAL_0_8_0 = RequirementCache("torchmetrics>=0.8.0")
TORCHMETRICS_GREATER_EQUAL_0_9_1 = RequirementCache("torchmetrics>=0.9.1")
TORCHMETRICS_GREATER_EQUAL_0_11 = RequirementCache("torchmetrics>=0.11.0")
TORCHMETRICS_GREATER_EQUAL_1_0_0 = RequirementCache("torchmetrics>=1.0.0")
