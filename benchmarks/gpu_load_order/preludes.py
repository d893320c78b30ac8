"""What each probe case runs first in its process (``sitecustomize.py`` executes ``PRELUDES[$PROBE_PRELUDE]``).

The order of imports is what the probe varies: on a CUDA build, loading a model crashed whenever numpy (and with
it the C++ runtime) was loaded before llama_cpp (``providers/llamacpp/load_order.py``)."""

PRELUDES = {
    "none": "",
    "llama_first": "import llama_cpp",
    "numpy_first": "import numpy",
    "sysinfo": "import llama_cpp; llama_cpp.llama_print_system_info()",
    "bigstack": "import threading; threading.stack_size(256 << 20)",
    "debuglog": (
        "import logging\n"
        "class Keep(logging.Handler):\n"
        "    def emit(self, record): pass\n"
        "l = logging.getLogger('judgesdk.llamacpp'); l.setLevel(logging.DEBUG); l.addHandler(Keep())\n"
    ),
    "checkpy": (  # what gpu-check's workers do before their first provider (they never crashed)
        "import logging, llama_cpp\n"
        "class Keep(logging.Handler):\n"
        "    def emit(self, record): pass\n"
        "l = logging.getLogger('judgesdk.llamacpp'); l.setLevel(logging.DEBUG); l.addHandler(Keep())\n"
        "from judgesdk.providers.llamacpp import route_llama_log\n"
        "route_llama_log(); llama_cpp.llama_supports_gpu_offload(); llama_cpp.llama_print_system_info()\n"
    ),
}
