import Glibc

/// The name the kernel shows for a thread (what `top -H` and `perf` show).
package enum ThreadName {
    /// Names the calling thread, from inside: a new thread starts with its creator's name, and
    /// Foundation's `Thread.name` does not reliably reach the kernel. `pthread_setname_np` is not
    /// visible to Swift here; this is the file it writes. The kernel keeps 15 bytes of a name.
    package static func setForCurrentThread(_ name: String) {
        let file = Glibc.open("/proc/thread-self/comm", O_WRONLY)
        guard file >= 0 else { return }
        _ = name.utf8CString.withUnsafeBufferPointer { Glibc.write(file, $0.baseAddress, $0.count - 1) }
        _ = Glibc.close(file)
    }
}
