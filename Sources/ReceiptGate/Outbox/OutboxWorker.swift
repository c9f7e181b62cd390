import Foundation
import HTTPClient
import Postgres
import ReceiptCore
import Synchronization

/// Delivers the outbox to game servers: at least once, in order per transaction, signed with the
/// client's HMAC scheme, retried with exponential back-off and jitter for three days. Any number
/// of processes may run it: an event is claimed with a lease (`FOR UPDATE SKIP LOCKED`), so two
/// never send the same event at the same time, and a crashed sender's lease simply runs out.
///
/// Up to `maxInFlight` sends run at once, each slot refilled as soon as it frees (a slow receiver
/// holds one slot, not a batch), about `perClient` of one client at most and clients served in
/// turns, so one client's slow or dead receiver leaves slots to everyone else; a receiver that
/// keeps failing is opened (`ReceiverCircuits`) so it holds no slots while it is down, and new
/// messages for it are written parked (`OutboxHandoff.openReceivers`) until its probe answers;
/// the loop parks and releases what the database holds for it (`settleReceivers`).
/// A client with `--webhook-batch` gets the webhooks started together several to a POST
/// (`OutboxSends`); slots still count messages.
public final class OutboxWorker: Sendable {
    public struct Configuration: Sendable {
        package var pollInterval: Duration = .milliseconds(500)
        /// What one `deliverDue` claims.
        package var batchSize = 10
        /// Sends under way at once in the running worker (each a transfer in its HTTP client's multi handle).
        package var maxInFlight = 64
        /// At most this many of one client's messages under way at once (a claim may add up to the
        /// free slots): the rest are kept for other clients while one's receiver hangs.
        package var perClient = 48
        /// Failures in a row that open a receiver, and how often an open one is probed.
        package var circuitThreshold = 5
        package var probeInterval: Duration = .seconds(30)
        package var attemptTimeout: Duration = .seconds(10)
        package var lease: Duration = .seconds(60)
        package var baseDelay: Duration = .seconds(10)
        package var maxDelay: Duration = .seconds(3600)
        package var giveUpAfter: Duration = .seconds(3 * 86_400)
        /// `RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE`: deliveries may reach loopback and private addresses.
        package var allowPrivateDestinations = false
        package init() {}
    }

    let outbox: OutboxRepository
    let clients: ClientRepository
    /// Stores whose purchases are acknowledged through the outbox.
    let acknowledgers: [StoreID: any PurchaseAcknowledging]
    /// Sends `.email` messages when SMTP is configured; without it, mail waits in the outbox.
    let mailer: Mailer?
    /// Answers stores' refund requests (`.refundAnswer`), where a store can.
    let refundAnswers: RefundAnswers?
    /// Stores told the account a purchase linked after the sale belongs to (`.storeAccountToken`).
    let accountTokenSetters: [StoreID: any AccountTokenSetting]
    /// Sends reports of purchases made outside a store's billing (`.externalPurchaseReport`).
    let externalPurchaseReports: ExternalPurchaseReports?
    let http: HTTPClient
    let configuration: Configuration
    let logger: Logger
    let circuits: ReceiverCircuits
    let delivered: DeliveredBatcher
    /// What this process's verifications wrote handed, sent without a claim.
    let handoff: OutboxHandoff?
    /// When `settleReceivers` may try again after its statements failed, and how many times in a
    /// row they have: the database is not asked on every turn of the loop while it is away.
    private let settleRetry = Mutex<(at: Date?, failures: Int)>((nil, 0))
    /// When `vouchHanded` may try again after its statement failed.
    private let vouchRetry = Mutex<Date?>(nil)
    /// The client and the secret its messages are signed with; nil for an unknown or disabled one.
    let signingSecret: @Sendable (String) async throws -> (Client, String)?
    /// The service's clock: when a message is given up on, and the timestamp it is signed with.
    let now: @Sendable () -> Date
    private let task = TaskBox()

    init(
        outbox: OutboxRepository, clients: ClientRepository, acknowledgers: [StoreID: any PurchaseAcknowledging] = [:],
        configuration: Configuration = Configuration(), logger: Logger, mailer: Mailer? = nil,
        refundAnswers: RefundAnswers? = nil,
        accountTokenSetters: [StoreID: any AccountTokenSetting] = [:],
        externalPurchaseReports: ExternalPurchaseReports? = nil,
        signingSecret: (@Sendable (String) async throws -> (Client, String)?)? = nil,
        handoff: OutboxHandoff? = nil,
        now: @escaping @Sendable () -> Date
    ) {
        self.now = now
        self.handoff = handoff
        self.signingSecret = signingSecret ?? { [clients] in try await clients.secret(for: $0) }
        self.mailer = mailer
        self.accountTokenSetters = accountTokenSetters
        self.externalPurchaseReports = externalPurchaseReports
        self.refundAnswers = refundAnswers
        self.outbox = outbox
        self.clients = clients
        self.acknowledgers = acknowledgers
        self.configuration = configuration
        self.logger = logger
        delivered = DeliveredBatcher(outbox: outbox, freedAtMost: max(1, configuration.maxInFlight))
        // The handoff's circuits when it has them: the writers and the worker see one answer.
        circuits = handoff?.circuits ?? ReceiverCircuits(configuration, now: now)
        var http = HTTPClient.Configuration()
        http.retry = .none  // the outbox is the retry mechanism
        http.timeout = configuration.attemptTimeout
        http.concurrentTransfers = max(1, configuration.maxInFlight)
        self.http = HTTPClient(http)
    }

    package func start() {
        task.set(Task { [self] in await run() })
    }

    /// What wakes the worker's loop.
    private enum Wake: Sendable {
        /// A send of this client's finished, of this many messages.
        case sent(String, Int)
        /// The poll interval passed.
        case tick
        /// A verification handed over messages it wrote handed.
        case handed
    }

    /// Keeps up to `maxInFlight` sends under way: sends what verifications handed over, claims as
    /// many as slots are free, then waits for a send to finish, a handover or the poll interval,
    /// whichever comes first.
    private func run() async {
        await withTaskGroup(of: Wake.self) { group in
            var inFlight = 0, tickPending = false, ticked = false, watching = false, byClient: [String: Int] = [:]
            // The last claim got all it asked for: more may be due at once.
            var backlog = true
            // Clients left out of the last claim, at their share: once one has a slot again and
            // nothing handed over to fill it, what it has due in the database is claimed.
            var heldBack = Set<String>()
            // Sends messages already counted in `inFlight` and `byClient`: a batching client's
            // webhooks several to a POST (`OutboxSends`), signed as this turn read its client.
            func start(_ events: [OutboxRepository.Claimed]) async {
                let signers = await batchingSigners(of: events)
                for send in OutboxSends(events, batches: signers.mapValues(\.client.webhookBatch)).all {
                    // Not cancelled by `stop()`: a claimed message is sent and its outcome recorded,
                    // so a stop does not send it twice. The slots free once the receiver has answered
                    // a success: a claimed message's delivered mark is recorded in the next group
                    // commit meanwhile, under its lease (so no claim takes it again), and `stop()`
                    // waits for those; a handed message's success records nothing.
                    group.addTask {
                        await withCheckedContinuation { (answered: CheckedContinuation<Void, Never>) in
                            Task {
                                if send.batched, let signer = signers[send.events[0].clientID] {
                                    await self.deliverBatch(send.events, signer: signer) { answered.resume() }
                                } else {
                                    await self.deliver(send.events[0]) { answered.resume() }
                                }
                            }
                        }
                        return .sent(send.events[0].clientID, send.events.count)
                    }
                }
            }
            while !Task.isCancelled {
                // Parks first: a park tried again must not take back the probe asked for next.
                await settleReceivers()
                await askForProbes()
                // Handed-over messages are already this process's: no statement claims them. Those
                // of a client at its share wait for its slots; what waited too long for one
                // (`handedWait`) goes back to the database, where claims serve clients in turns.
                if let handoff {
                    // A quarter of the slots stays for claims: what is due in the database (retries,
                    // notifications' messages, other processes' expired leases) is never starved.
                    let handedSlots = configuration.maxInFlight - max(1, configuration.maxInFlight / 4)
                    let handed = handoff.take(limit: handedSlots - inFlight) { client in
                        guard byClient[client, default: 0] < configuration.perClient else { return false }
                        inFlight += 1
                        byClient[client, default: 0] += 1
                        return true
                    }
                    await start(handed)
                    let waited = handoff.takeWaiting(longerThan: handedWait)
                    if !waited.isEmpty { await giveBack(waited) }
                }
                // Claims come in batches: a claim for every slot that frees would cost the database
                // a statement a message. So one waits until a quarter of the slots are free (or none
                // is in use, or the poll interval passed); and once a claim found fewer than it asked
                // for of every client (no backlog: this process's new messages come handed over),
                // until the poll interval passes.
                let free = configuration.maxInFlight - inFlight
                let busy = byClient.filter { $0.value >= configuration.perClient }.map(\.key).sorted()
                var claimed: [OutboxRepository.Claimed] = []
                if free > 0, ticked || backlog, free >= max(1, configuration.maxInFlight / 4) || inFlight == 0 || ticked
                {
                    claimed =
                        (try? await outbox.claim(
                            targets: targets, limit: free, lease: Int(configuration.lease.components.seconds),
                            busy: busy)) ?? []
                    ticked = false
                    backlog = claimed.count == free
                    heldBack = Set(busy)
                }
                for event in claimed {
                    inFlight += 1
                    byClient[event.clientID, default: 0] += 1
                }
                await start(claimed)
                if claimed.count == free, free > 0 { continue }  // as many as asked for: more may be due now
                if !tickPending {
                    tickPending = true
                    let interval = configuration.pollInterval
                    group.addTask {
                        try? await Task.sleep(for: interval); return .tick
                    }
                }
                if let handoff, !watching {
                    watching = true
                    group.addTask {
                        await handoff.handed(); return .handed
                    }
                }
                guard let wake = await group.next() else { continue }
                switch wake {
                case .tick:
                    tickPending = false
                    ticked = true
                    await vouchHanded()
                    await recoverHanded()
                case .handed:
                    watching = false
                case .sent(let client, let messages):
                    // Settled batches go a poll interval at the latest, or as soon as a few wait.
                    if handoff?.vouchableCount ?? 0 >= 16 { await vouchHanded() }
                    inFlight -= messages
                    byClient[client, default: messages] -= messages
                    if byClient[client] == 0 { byClient[client] = nil }
                    if heldBack.contains(client), handoff?.holds(client) != true {
                        heldBack.remove(client)
                        backlog = true
                    }
                }
            }
        }
    }

    /// How long a handed message may wait for a slot: it must still be under its lease for its
    /// whole attempt.
    var handedWait: Duration { max(.zero, configuration.lease - configuration.attemptTimeout) / 2 }

    /// Handed-over messages this worker will not send now: claimable by any worker at once.
    private func giveBack(_ events: [OutboxRepository.Claimed]) async {
        do {
            try await outbox.release(events)
            handoff?.settled(events)
        } catch {
            // Their leases run out: claimed again then (handed ones put back pending first).
            logger.error("could not give back handed-over outbox messages", ["error": "\(error)"])
        }
    }

    /// Deletes the rows of the handed batches this process settled whole: what they held in
    /// flight is delivered or pending again. What fails is tried with the next ones (meanwhile
    /// later messages of their aggregates wait; past the lease, any worker sends what they held
    /// again).
    /// After a failure, not before four poll intervals (none when `waiting` is false: a stopping
    /// worker's last try).
    func vouchHanded(waiting: Bool = true) async {
        guard let handoff else { return }
        if waiting, let retryAt = vouchRetry.withLock({ $0 }), now() < retryAt { return }
        let batches = handoff.takeVouchable()
        guard !batches.isEmpty else { return }
        do {
            try await outbox.vouch(forBatches: batches)
            vouchRetry.withLock { $0 = nil }
        } catch {
            handoff.vouchLater(batches)
            let first = vouchRetry.withLock { retry -> Bool in
                defer { retry = now().addingTimeInterval(4 * Self.seconds(configuration.pollInterval)) }
                return retry == nil
            }
            if first { logger.error("could not record handed outbox messages settled", ["error": "\(error)"]) }
        }
    }

    /// Handed batches whose sender stopped without settling them (their lease ran out): what
    /// they held in flight is pending again, for any worker.
    private func recoverHanded() async {
        do {
            let recovered = try await outbox.recoverHanded()
            if recovered > 0 {
                logger.warning(
                    "handed outbox messages whose sender stopped are sent again", ["messages": String(recovered)])
            }
        } catch {
            logger.error("could not take back handed outbox messages", ["error": "\(error)"])
        }
    }

    /// An open receiver's probe is due: one of its parked messages is made due for the next claim.
    private func askForProbes() async {
        for receiver in circuits.probesDue() {
            _ = try? await outbox.probe(clientID: receiver.clientID, target: receiver.target)
        }
    }

    package func stop() async {
        await task.cancelAndWait()
        await delivered.settled()
        // What the last sends changed about their receivers is carried out before the loop's
        // last turn is forgotten: a closed receiver's messages would otherwise wait out `maxDelay`.
        await Task { await settleReceivers(waiting: false) }.value
        // What was handed and not sent is claimable by any worker at once, not after its lease.
        if let handoff {
            let unsent = handoff.close()
            if !unsent.isEmpty { await Task { await giveBack(unsent) }.value }
            await Task { await vouchHanded(waiting: false) }.value
        }
    }

    /// What this worker can send. E-mail waits in the outbox until SMTP is configured.
    var targets: [OutboxTarget] {
        [.webhook, .refundCallback, .delivery] + (acknowledgers.isEmpty ? [] : [.storeAcknowledgement])
            + (mailer == nil ? [] : [.email])
            + (refundAnswers == nil ? [] : [.refundAnswer]) + (accountTokenSetters.isEmpty ? [] : [.storeAccountToken])
            + (externalPurchaseReports == nil ? [] : [.externalPurchaseReport])
    }

    /// Claims due messages (only the oldest pending one per aggregate, so order holds) and sends
    /// them, once (tests, and a caller that wants the outbox sent now).
    @discardableResult
    package func deliverDue() async throws -> Int {
        let claimed = try await outbox.claim(
            targets: targets, limit: configuration.batchSize, lease: Int(configuration.lease.components.seconds))
        // Not cancelled by `stop()`: a claimed message is sent and its outcome recorded (a
        // cancelled caller's database work is skipped), so a stop does not send it twice.
        await Task {
            await withTaskGroup(of: Void.self) { group in
                for event in claimed { group.addTask { await self.deliver(event) } }
            }
            await settleReceivers()
        }.value
        return claimed.count
    }

    /// Sends `event` and records the outcome; `answered` is called once, when its slot may go to
    /// another message: after a success was answered (before it is recorded), else at the end.
    private func deliver(_ event: OutboxRepository.Claimed, answered: @Sendable () -> Void = {}) async {
        var slotFreed = false
        defer { if !slotFreed { answered() } }
        // A game server's receiver that keeps failing is not tried but for its probe.
        let receiver: ReceiverCircuits.Receiver? =
            switch event.target {
            case .webhook, .refundCallback, .delivery:
                ReceiverCircuits.Receiver(clientID: event.clientID, target: event.target.rawValue)
            case .storeAcknowledgement, .email, .refundAnswer, .storeAccountToken, .externalPurchaseReport: nil
            }
        if let receiver, case .park(let seconds) = circuits.decide(receiver) {
            await park([event], for: seconds, receiver: receiver)
            return
        }
        // `final`: the recipient refused it for good; it is kept as failed and not tried again.
        let (failure, final): (String?, Bool)
        switch event.target {
        case .storeAcknowledgement: (failure, final) = (await acknowledge(event), false)
        case .email: (failure, final) = (await sendMail(event), false)
        case .refundAnswer: (failure, final) = (await answerRefundRequest(event), false)
        case .storeAccountToken: (failure, final) = await setAccountToken(event)
        case .externalPurchaseReport:
            (failure, final) =
                await externalPurchaseReports?.send(event.payload)
                ?? ("external purchase reports are not sent by this process", false)
        case .webhook, .refundCallback, .delivery:
            let posted = await post(event)
            (failure, final) = (posted.failure, false)
            // Only what the receiver answered (or did not) says whether it is down.
            if let receiver {
                if posted.reachedReceiver {
                    circuits.record(receiver, succeeded: failure == nil, failedBefore: event.attempts > 0)
                } else {
                    circuits.unanswered(receiver)
                }
            }
        }
        do {
            if let failure {
                try await recordFailure(event, failure, final: final)
            } else if event.handedIn != nil {
                // Written delivered: nothing to record, and its slot is free at once.
                handoff?.settled([event])
            } else {
                // Queued before the slot frees, so a stopping worker's `settled()` waits for it; held
                // until recorded when too many answered messages wait for their marks already.
                try await delivered.delivered(event) {
                    slotFreed = true
                    answered()
                }
            }
        } catch {
            // The lease runs out and another attempt follows: at least once, never lost.
            logger.error("could not record an outbox outcome", ["event.id": event.eventID, "error": "\(error)"])
        }
    }

    /// Records a failed attempt: tried again after a back-off, or, `final` or past `giveUpAfter`, dead.
    func recordFailure(_ event: OutboxRepository.Claimed, _ failure: String, final: Bool) async throws {
        let attempts = event.attempts + 1
        let giveUp =
            final || now().timeIntervalSince(event.createdAt) >= Double(configuration.giveUpAfter.components.seconds)
        let delay = Self.delay(afterAttempts: attempts, base: configuration.baseDelay, max: configuration.maxDelay)
        try await outbox.markFailed(
            event, attempts: attempts, error: failure, dead: giveUp,
            retryInSeconds: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
        handoff?.settled([event])
        logger.warning(
            "outbox delivery failed",
            [
                "event.id": event.eventID, "client.id": event.clientID, "target": event.target.rawValue,
                "attempts": String(attempts), "error": String(failure.prefix(200)), "dead": String(giveUp),
            ])
    }

    /// Messages for a receiver held open: due again in `seconds`, their attempts unchanged.
    func park(_ events: [OutboxRepository.Claimed], for seconds: Double, receiver: ReceiverCircuits.Receiver) async {
        do {
            try await outbox.park(events, until: seconds)
            handoff?.settled(events)
        } catch {
            logger.error(
                "could not park an outbox message", ["event.id": events.first?.eventID ?? "", "error": "\(error)"])
        }
        // Closed meanwhile (its probe answered while these were parked): they are released with
        // the rest of what waits for it.
        if !circuits.isOpen(receiver) { circuits.markUnsettled(receiver) }
    }

    /// Parks what the database holds for each receiver that opened, and makes due what waits for
    /// each one that closed, as its circuit stands now (`ReceiverCircuits.takeUnsettled`). One at a
    /// time, from the worker's loop: the last statement for a receiver follows its last change. A
    /// statement that fails is tried again after a pause that doubles with each pass in a row
    /// that had a failure, from the poll interval up to the probe interval (none when `waiting` is
    /// false: a stopping worker's last try), so a closed receiver's messages are not left parked
    /// for want of their release, and an outage costs a log line, not one a turn. A pass stops at
    /// a failure that says the database is away (`PostgresError.isRetryable`); any other (one
    /// receiver's statement timing out) leaves the rest of the pass to go on.
    func settleReceivers(waiting: Bool = true) async {
        if waiting, let retryAt = settleRetry.withLock({ $0.at }), now() < retryAt { return }
        var unsettled = circuits.takeUnsettled()[...]
        var firstFailure: (receiver: ReceiverCircuits.Receiver, error: any Error)?
        while let (receiver, parkFor) = unsettled.popFirst() {
            guard let target = OutboxTarget(rawValue: receiver.target) else { continue }
            do {
                if let parkFor {
                    let parked = try await outbox.parkReceiver(
                        clientID: receiver.clientID, target: target, seconds: parkFor)
                    logger.warning(
                        "receiver keeps failing; its messages wait for a probe to succeed",
                        ["client.id": receiver.clientID, "target": receiver.target, "parked": String(parked)])
                } else {
                    let released = try await outbox.releaseReceiver(clientID: receiver.clientID, target: target)
                    logger.info(
                        "receiver answers again; what waited for it is due now",
                        ["client.id": receiver.clientID, "target": receiver.target, "released": String(released)])
                }
            } catch {
                circuits.markUnsettled(receiver)
                if firstFailure == nil { firstFailure = (receiver, error) }
                // The database is away: the rest are not tried now either.
                if (error as? PostgresError)?.isRetryable == true {
                    for (rest, _) in unsettled { circuits.markUnsettled(rest) }
                    break
                }
            }
        }
        if let (receiver, error) = firstFailure {
            let poll = Self.seconds(configuration.pollInterval)
            let failures = settleRetry.withLock { retry in
                retry.failures += 1
                let pause = min(poll * pow(2, Double(min(retry.failures - 1, 20))), max(poll, circuits.probeInterval))
                retry.at = now().addingTimeInterval(pause)
                return retry.failures
            }
            if failures == 1 {
                logger.error(
                    "could not park or release a receiver's messages; tried again until it can",
                    ["client.id": receiver.clientID, "target": receiver.target, "error": "\(error)"])
            }
            return
        }
        let failed = settleRetry.withLock { retry in
            defer { retry = (nil, 0) }
            return retry.failures
        }
        if failed > 0 {
            logger.warning("receivers' messages parked and released again", ["failures": String(failed)])
        }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Posts to the client's URL for the target, signed like our API: nil on success, else why
    /// not; and whether it got as far as the receiver. A client directory that cannot be read
    /// (the database away) says nothing about the game server's receiver, so it opens no circuit.
    private func post(_ event: OutboxRepository.Claimed) async -> (failure: String?, reachedReceiver: Bool) {
        let signer: (Client, String)?
        do { signer = try await signingSecret(event.clientID) } catch {
            return ("the client could not be read: \(error)", false)
        }
        guard let (client, secret) = signer else {
            return ("client has no \(event.target.rawValue) URL (or is disabled)", true)
        }
        // A client that batches gets every webhook in the batched format, one alone too.
        if event.target == .webhook, client.webhookBatch > 1 {
            return (await postBatch([event], client: client, secret: secret), true)
        }
        let failure = await post(
            Data(event.payload.utf8), for: event.target, to: client, secret: secret,
            headers: [("X-Event-Id", event.eventID), ("X-Event-Type", event.type)])
        return (failure, true)
    }

    /// Posts `body` to `client`'s URL for `target`, signed like our API (`X-Client-ID`,
    /// `X-Timestamp`, `X-Signature` over the body), with `headers` besides. Nil on success, else why not.
    func post(
        _ body: Data, for target: OutboxTarget, to client: Client, secret: String, headers: [(String, String)]
    ) async -> String? {
        guard let url = Self.url(of: client, for: target) else {
            return "client has no \(target.rawValue) URL (or is disabled)"
        }
        guard url.lowercased().hasPrefix("https://") || client.allowsInsecureURLs else {
            return "\(target.rawValue) URL is not https and the client was not created with --allow-insecure-url"
        }
        let timestamp = String(Int(now().timeIntervalSince1970))
        let signature: String
        do {
            signature = try ClientAuthentication.signature(
                secret: secret, clientID: client.clientID, timestamp: timestamp, body: body)
        } catch {
            return "the message could not be signed: \(error)"  // kept on the row and retried; never sent unsigned
        }
        var request = HTTPClient.Request(
            method: "POST", url: url,
            headers: [
                ("Content-Type", "application/json"), ("X-Client-ID", client.clientID), ("X-Timestamp", timestamp),
                ("X-Signature", signature),
            ] + headers, body: body)
        // Resolved, checked and pinned at delivery time: a game server's URL must not lead to our
        // own network (loopback, private ranges, cloud metadata) unless the operator allows it,
        // and then it still goes the same way.
        request.destinations = configuration.allowPrivateDestinations ? .anyAddressPinned : .publicOnly
        do {
            let response = try await http.send(request)
            return (200..<300).contains(response.status) ? nil : "HTTP \(response.status)"
        } catch {
            return "\(error)"
        }
    }

    /// Sends an e-mail through SMTP. Nil on success.
    private func sendMail(_ event: OutboxRepository.Claimed) async -> String? {
        guard let mailer else { return "no SMTP server configured" }
        if let unopened = event.unopened { return unopened }
        return await mailer.send(payload: event.payload, eventID: event.eventID)
    }

    /// Sends a store acknowledgement through its provider. Nil on success.
    private func acknowledge(_ event: OutboxRepository.Claimed) async -> String? {
        guard
            let acknowledgement = try? JSONDecoder().decode(StoreAcknowledgement.self, from: Data(event.payload.utf8)),
            let acknowledger = acknowledgers[acknowledgement.store]
        else {
            return "no store provider acknowledges this message"
        }
        do {
            // The client's own store credentials (a per-client store key), opened only for this send.
            let credentials = try await clients.sealedSettings(
                of: acknowledgement.clientID, prefix: "\(acknowledgement.store.rawValue).")
            try await acknowledger.acknowledge(acknowledgement, credentials: credentials)
            return nil
        } catch {
            return "\(error)"
        }
    }

    private func answerRefundRequest(_ event: OutboxRepository.Claimed) async -> String? {
        guard let refundAnswers else { return "refund answers are not sent by this process" }
        return await refundAnswers.send(event.payload)
    }

    /// Tells a store which account a linked purchase belongs to. Nil on success; a refusal other
    /// than the store's 5xx or 429 is final, kept with the store's error code.
    private func setAccountToken(_ event: OutboxRepository.Claimed) async -> (failure: String?, final: Bool) {
        guard let assignment = try? JSONDecoder().decode(AccountTokenAssignment.self, from: Data(event.payload.utf8)),
            let setter = accountTokenSetters[assignment.store]
        else {
            return ("no store provider sets account tokens for this message", false)
        }
        do {
            let credentials = try await clients.sealedSettings(
                of: assignment.clientID, prefix: "\(assignment.store.rawValue).")
            try await setter.setAccountToken(assignment, credentials: credentials)
            return (nil, false)
        } catch let refused as StoreVerificationError where !refused.isRetryable {
            return ("refused by the store: \(refused.description)", true)
        } catch {
            return ("\(error)", false)
        }
    }

    static func url(of client: Client, for target: OutboxTarget) -> String? {
        switch target {
        case .refundCallback: client.refundCallbackURL
        case .delivery: client.deliveryURL
        case .webhook: client.webhookURL
        case .email, .storeAcknowledgement, .refundAnswer, .storeAccountToken, .externalPurchaseReport: nil
        }
    }

    /// Exponential back-off with jitter: base × 2^(n−1), capped, then between half and all of it.
    static func delay(afterAttempts attempts: Int, base: Duration, max: Duration) -> Duration {
        let exponential = base * Int(1 << Swift.min(attempts - 1, 30))
        let capped = Swift.min(exponential, max)
        return capped / 2 + capped / 2 * Double.random(in: 0...1)
    }
}

/// The worker's loop task, replaced and cancelled under a lock.
private final class TaskBox: Sendable {
    private let task = Mutex<Task<Void, Never>?>(nil)

    func set(_ task: Task<Void, Never>) {
        self.task.withLock { $0 = task }
    }

    func cancelAndWait() async {
        let current = task.withLock { task in
            defer { task = nil }
            return task
        }
        current?.cancel()
        await current?.value
    }
}
