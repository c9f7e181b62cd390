import CCurl
import CShims
import Foundation
import Synchronization
import Workers

/// Every transfer of one `HTTPClient`, driven by one thread of its own through a libcurl multi
/// handle. A request under way is a handle in the multi, not a thread blocked for the whole
/// exchange: many can wait on slow servers at the cost of a socket each, and under load one
/// wake-up of the loop serves every socket that is ready, where a thread per transfer paid two
/// thread switches a request. The multi keeps the open connections for all its transfers.
///
/// At most `limit` transfers run at once; the rest wait in the order they came. A job waiting
/// for its turn is started only if its caller has not given up (`StartOrGiveUp`). `close()` stops
/// accepting jobs; those queued and under way still finish, then the thread ends.
final class TransferLoop: @unchecked Sendable {
    struct Job: Sendable {
        let transfer: Transfer
        let decision: StartOrGiveUp
        /// When the caller queued it: the transfer's timeout counts the wait for its turn.
        let queued: ContinuousClock.Instant
        let timeout: Duration
        let finished: @Sendable (Result<Transfer.Outcome, HTTPClientError>) -> Void
    }

    private struct Queue {
        var jobs = JobRing<Job>()
        var closed = false
        /// The loop is waiting in `curl_multi_poll` (or about to), and whether a wake-up was sent
        /// since: a burst of submits (a group commit hands over its webhooks together) wakes it
        /// once, not once a job, each a write on libcurl's wake-up socket and a turn of the loop.
        var polling = false
        var wakeSent = false
    }

    let limit: Int
    /// Milliseconds `curl_multi_poll` may wait when nothing wakes it.
    private let idleWaitMilliseconds: Int32
    /// Touched by the loop thread only, besides `curl_multi_wakeup`, which libcurl lets any thread call.
    private let multi: UnsafeMutableRawPointer
    private let queue = Mutex(Queue())

    init(limit: Int, name: String, idleWait: Duration = .seconds(1)) {
        EasyHandle.initializeGlobalState
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        self.multi = multi
        self.limit = max(1, limit)
        let (seconds, attoseconds) = idleWait.components
        idleWaitMilliseconds = Int32(clamping: max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        // Keep four connections open for every transfer that may run at once (libcurl's own ratio,
        // with many receivers' hosts in turns). By default libcurl sizes its cache by the handles
        // added at the moment, and each transfer's handle leaves when it ends, so a lull closed
        // kept-alive connections a busy moment then opened again (one new connection every dozen
        // webhooks, each a handshake on both ends).
        _ = rg_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 4 * self.limit)
        let threadName = String(decoding: name.utf8.prefix(15), as: UTF8.self)
        // The thread holds the loop until `close()` lets it end.
        Thread { [self] in
            ThreadName.setForCurrentThread(threadName)
            run()
        }.start()
    }

    /// Queues `job`; false (and nothing queued) once closed.
    func submit(_ job: Job) -> Bool {
        let (accepted, wake) = queue.withLock { queue -> (Bool, Bool) in
            guard !queue.closed else { return (false, false) }
            queue.jobs.append(job)
            let wake = queue.polling && !queue.wakeSent
            if wake { queue.wakeSent = true }
            return (true, wake)
        }
        if wake { curl_multi_wakeup(multi) }
        return accepted
    }

    func close() {
        // Woken under the lock: the loop reads `closed` under it, so once it may see it (and end,
        // and clean the multi up) this call is done with the multi.
        queue.withLock { queue in
            queue.closed = true
            curl_multi_wakeup(multi)
        }
    }

    private func run() {
        var running: [UnsafeMutableRawPointer: ActiveTransfer] = [:]
        var spare: [EasyHandle] = []
        while true {
            let (jobs, closed) = queue.withLock { queue -> ([Job], Bool) in
                var taken: [Job] = []
                while running.count + taken.count < limit, let job = queue.jobs.popFirst() { taken.append(job) }
                return (taken, queue.closed && queue.jobs.isEmpty)
            }
            for job in jobs { start(job, running: &running, spare: &spare) }
            if closed && running.isEmpty { break }
            var stillRunning: Int32 = 0
            _ = curl_multi_perform(multi, &stillRunning)
            collectFinished(running: &running, spare: &spare)
            // libcurl shortens the wait to its own next timeout; a submit or close wakes it at once
            // (a job queued before `polling` was set is taken without waiting).
            let idle = queue.withLock { queue -> Bool in
                guard queue.jobs.isEmpty || running.count >= limit else { return false }
                queue.polling = true
                queue.wakeSent = false
                return true
            }
            guard idle else { continue }
            _ = curl_multi_poll(multi, nil, 0, idleWaitMilliseconds, nil)
            queue.withLock { $0.polling = false }
        }
        spare.removeAll()
        curl_multi_cleanup(multi)
    }

    private func start(
        _ job: Job, running: inout [UnsafeMutableRawPointer: ActiveTransfer], spare: inout [EasyHandle]
    ) {
        guard job.decision.start() else { return }  // its caller gave up while it waited
        let left = job.timeout - (ContinuousClock.now - job.queued)
        guard left > .milliseconds(1) else {
            return job.finished(
                .failure(HTTPClientError(.timeout, "no transfer slot was free within the request's timeout")))
        }
        let easy = spare.popLast() ?? EasyHandle()
        do {
            let active = try job.transfer.prepare(on: easy, timeout: left, finished: job.finished)
            guard curl_multi_add_handle(multi, easy.pointer) == CURLM_OK else {
                spare.append(easy)
                return job.finished(.failure(HTTPClientError(.transport, "libcurl refused to start the transfer")))
            }
            running[easy.pointer] = active
        } catch {
            spare.append(easy)
            job.finished(.failure(error as? HTTPClientError ?? HTTPClientError(.transport, "\(error)")))
        }
    }

    private func collectFinished(
        running: inout [UnsafeMutableRawPointer: ActiveTransfer], spare: inout [EasyHandle]
    ) {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                let active = running.removeValue(forKey: handle)
            else { continue }
            let code = message.pointee.data.result
            curl_multi_remove_handle(multi, handle)
            active.finish(code)
            // A handle is kept for the next transfer while transfers may need it; the connections
            // live in the multi, not in the handle.
            if spare.count < limit { spare.append(active.easy) }
        }
    }
}
