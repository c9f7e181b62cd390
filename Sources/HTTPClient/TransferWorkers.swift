import CCurl
import Foundation

/// A libcurl easy handle, owned by one worker thread for its whole life (so its connection cache
/// is reused across that thread's transfers).
final class EasyHandle {
    let pointer: UnsafeMutableRawPointer

    init() {
        Self.initializeGlobalState
        guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed: out of memory") }
        pointer = handle
    }

    deinit { curl_easy_cleanup(pointer) }

    /// curl_global_init must run once before any other libcurl call, before threads use it.
    private static let initializeGlobalState: Void = {
        _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()
}

/// Threads that run transfers, each with its own easy handle. Jobs queue until a thread is free.
final class TransferWorkers: @unchecked Sendable {
    typealias Job = (EasyHandle) -> Void

    private let condition = NSCondition()  // guards the fields below
    private var jobs: [Job] = []
    private var closed = false

    init(count: Int) {
        for index in 0..<max(1, count) {
            let thread = Thread { [self] in work() }
            thread.name = "http-client-\(index)"
            thread.start()
        }
    }

    func enqueue(_ job: @escaping Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        let easy = EasyHandle()
        while true {
            condition.lock()
            while jobs.isEmpty && !closed { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job(easy)
        }
    }
}
