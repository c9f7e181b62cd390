import Foundation

/// Workers the whole process shares for computations that take milliseconds of CPU (scrypt, a
/// P-256 fixed-base table): one thread per core, so they run off the cooperative pool without
/// competing with it for more than the machine has, and memory-hungry ones (scrypt's 16 MiB)
/// are bounded by the thread count, not by how many requests arrive at once.
package enum SharedWorkers {
    package static let computations = BlockingWorkers<Void>(name: "compute", threads: ProcessInfo.processInfo.activeProcessorCount)
}
