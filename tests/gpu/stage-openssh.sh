#!/bin/sh
# Stages this machine's OpenSSH (ssh, sshd, ssh-keygen) with the libraries they link into one
# folder, for a GPU host that has no OpenSSH of its own (the H200 host has neither client nor
# server), so that tests/gpu/remote-search.sh can run workers over SSH to 127.0.0.1 there.
#   tests/gpu/stage-openssh.sh .gpu/openssh
# Each program is started through a wrapper in DEST/bin that sets LD_LIBRARY_PATH for it alone.
set -eu
dest=${1:-.gpu/openssh}
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/libexec" "$dest/lib"
for p in /usr/bin/ssh /usr/sbin/sshd /usr/bin/ssh-keygen; do
    cp "$p" "$dest/libexec/"
done
for bin in "$dest"/libexec/*; do
    ldd "$bin" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
        libc.so*|libm.so*|ld-linux*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*) ;; # the host's own
        *) cp -L "$lib" "$dest/lib/" ;;
    esac
done
for p in ssh sshd ssh-keygen; do
    cat > "$dest/bin/$p" <<SCRIPT
#!/bin/sh
here=\$(dirname "\$(readlink -f "\$0")")
LD_LIBRARY_PATH="\$here/../lib" exec "\$here/../libexec/$p" "\$@"
SCRIPT
    chmod +x "$dest/bin/$p"
done
echo "staged OpenSSH in $dest ($(du -sh "$dest" | cut -f1))"
