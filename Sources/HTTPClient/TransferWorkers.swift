import CCurl
import Foundation
import Workers

/// A libcurl easy handle, owned by one worker thread for its whole life (so its connection cache
/// is reused across that thread's transfers).
final class EasyHandle {
    let pointer: UnsafeMutableRawPointer

    init() {
        guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed: out of memory") }
        pointer = handle
    }

    deinit { curl_easy_cleanup(pointer) }

    /// curl_global_init must run once before any other libcurl call, on the thread that starts the
    /// workers and before they exist: it initializes OpenSSL, which must not race a process exit
    /// (a start-up that fails on a bad setting exits while the workers are new).
    static let initializeGlobalState: Void = {
        _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()
}

/// Threads that run transfers, each with its own easy handle. Jobs queue until a thread is free.
typealias TransferWorkers = BlockingWorkers<EasyHandle>

extension BlockingWorkers where Local == EasyHandle {
    convenience init(transfers count: Int, name: String) {
        EasyHandle.initializeGlobalState
        self.init(name: name, threads: count, local: { EasyHandle() })
    }
}
