import Foundation

/// Workers the whole process shares for computations that take milliseconds of CPU (scrypt, a
/// P-256 fixed-base table): one thread per core, so they run off the cooperative pool without
/// competing with it for more than the machine has, and memory-hungry ones (scrypt's 16 MiB)
/// are bounded by the thread count, not by how many requests arrive at once.
package enum SharedWorkers {
    package static let computations = BlockingWorkers<Void>(
        name: "compute", threads: ProcessInfo.processInfo.activeProcessorCount)
    /// Rare waits that take seconds: starting or stopping an embedded cluster (`initdb`, `pg_ctl`),
    /// stopping an HTTP daemon (`MHD_stop_daemon` joins its threads). Off the cooperative pool,
    /// where one of them would hold a thread every task needs.
    package static let waits = BlockingWorkers<Void>(name: "waits", threads: 2)
}
