#!/bin/sh
# Stages kforge-headless, the Qt-free workers and the shared libraries a GPU host without Qt lacks
# (QtCore, ICU, muparser, ...) into one folder that can be copied there. Run it after building
# kforge-headless (any preset) and the workers-only build (see tests/gpu/README.md):
#   tests/gpu/stage-headless.sh build .gpu/build .gpu/headless
# On the host: LD_LIBRARY_PATH=.gpu/headless/lib .gpu/headless/bin/kforge-headless run ...
# The folder is larger than one carry allows (libcurl and the keyring bring their libraries): carry
# it as a tarball, e.g. tar cJf .gpu/headless.tar.xz -C .gpu headless, and unpack it on the host.
set -eu
build=${1:-build}
workers=${2:-.gpu/build}
dest=${3:-.gpu/headless}
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
cp "$build/bin/kforge-headless" "$dest/bin/"
strip "$dest/bin/kforge-headless"
# The fake LLM server, for searches with a scripted model on hosts that reach no LLM endpoint.
if [ -x "$build/bin/kforge-fake-llm-server" ]; then
    cp "$build/bin/kforge-fake-llm-server" "$dest/bin/"
    strip "$dest/bin/kforge-fake-llm-server"
fi
for w in "$workers"/bin/kforge-worker-cuda; do
    cp "$w" "$dest/bin/"
    strip "$dest/bin/$(basename "$w")"
done
# Everything the binaries link except the C and C++ runtimes, which every host has (newer).
for bin in "$dest"/bin/*; do
    ldd "$bin" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
        libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libdl.so*|libpthread.so*|librt.so*|libcuda.so*|libOpenCL.so*|libnvrtc*|libcupti*|libutil.so*|libz.so*) ;; # the host has these
        *) cp -L "$lib" "$dest/lib/" ;;
    esac
done
# For workers reached over SSH (kforge run --worker ssh://host/DIR/bin/kforge-worker-cuda.sh): a
# login shell does not carry LD_LIBRARY_PATH, so this starts the worker with the staged libraries.
cat > "$dest/bin/kforge-worker-cuda.sh" <<'SCRIPT'
#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH="$here/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/kforge-worker-cuda" "$@"
SCRIPT
chmod +x "$dest/bin/kforge-worker-cuda.sh"
du -sh "$dest"
