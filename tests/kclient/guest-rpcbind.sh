# guest-rpcbind.sh: runs in the kernel-client VM (busybox sh -e, cwd = the
# NFS mount, made without port= and mountport=). Reads rb.bin, which the host
# put in the export, and reports its md5 and the mount's options.
grep " /mnt nfs" /proc/mounts | sed 's/^/KTEST-STATE mount /'
echo "KTEST-STATE rb.md5 $(md5sum < rb.bin | cut -d' ' -f1)"
