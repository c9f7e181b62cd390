import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A new purchase's webhook is written claimed by the process that recorded it and sent from
/// memory; the database stays the truth when that process never sends it.
@Suite struct OutboxHandoffRules {
    /// E-mail by default: the harness's own worker claims no mail (it has no SMTP), so what these
    /// tests write stays as they left it.
    static func message(_ key: String, target: OutboxTarget = .email, client: String) throws -> OutboxRepository.Queued
    {
        try OutboxRepository.envelope(
            event: "transaction.verified", payload: ["transaction_id": key], client: client, aggregateKey: key,
            target: target)
    }

    /// A message written the ordinary way and claimed from the database (not handed): its
    /// success is recorded by a delivered mark. E-mail: the harness's own worker sends none.
    static func claimedFromTheDatabase(
        _ key: String, _ harness: VerifyHarness, lease: Int = 600
    ) async throws -> OutboxRepository.Claimed {
        let message = try Self.message(key, client: harness.client.clientID)
        try await harness.pool.withTransaction { try OutboxRepository.insert([message], on: $0) }
        let claimed = try await harness.service.repositories.outbox.claim(targets: [.email], limit: 10, lease: lease)
        return try #require(claimed.first { $0.aggregateKey == key })
    }

    /// A message as a verification hands it over, of `client`.
    static func claimed(_ id: Int64, client: String) -> OutboxRepository.Claimed {
        OutboxRepository.Claimed(
            id: id, eventID: "e\(id)", clientID: client, aggregateKey: "app_store:\(id)", type: "transaction.verified",
            payload: "{}", attempts: 0, createdAt: Date(), target: .webhook, lease: "2026-12-06 00:00:00+00")
    }

    @Test func roomIsBoundedAndGivenBackWhenATransactionEnds() {
        let handoff = OutboxHandoff(capacity: 3, leaseSeconds: 60)
        #expect(handoff.reserve(2) == 2)
        #expect(handoff.reserve(5) == 1, "only what is left")
        #expect(handoff.reserve(1) == 0)
        handoff.hand([], reserved: 2)  // a batch rolled back: nothing written claimed
        #expect(handoff.reserve(4) == 2)
    }

    /// Event ids grow with time (their unique index is appended to, not written all over), and are
    /// still version-7 UUIDs a receiver can parse.
    @Test func eventIDsAreTimeOrderedUUIDs() {
        let earlier = UUID.timeOrdered(at: Date(timeIntervalSince1970: 1_780_000_000))
        let later = UUID.timeOrdered(at: Date(timeIntervalSince1970: 1_780_000_000.002))
        #expect(earlier.uuidString.lowercased() < later.uuidString.lowercased())
        #expect(earlier.uuidString.lowercased().hasPrefix("019e"))
        #expect(Array(earlier.uuidString)[14] == "7", "version 7")
        #expect("89AB".contains(Array(earlier.uuidString)[19]), "the RFC's variant")
        #expect(UUID.timeOrdered(at: Date(timeIntervalSince1970: 1_780_000_000)) != earlier, "random below the time")
        for id in (0..<200).map({ _ in UUID() }) + [earlier, later] {
            #expect(id.lowercasedText == id.uuidString.lowercased())
        }
    }

    @Test func aClientAtItsShareLeavesItsMessagesWaitingAndOthersGoAhead() throws {
        let handoff = OutboxHandoff(capacity: 10, leaseSeconds: 60)
        #expect(handoff.reserve(4) == 4)
        handoff.hand(
            [Self.claimed(1, client: "busy"), Self.claimed(2, client: "other"), Self.claimed(3, client: "busy")],
            reserved: 4)
        #expect(handoff.reserve(10) == 7, "what waits in memory counts against the bound")
        handoff.hand([], reserved: 7)
        #expect(handoff.take(limit: 10) { $0 != "busy" }.map(\.id) == [2])
        #expect(handoff.takeWaiting(longerThan: .seconds(3600)).isEmpty, "none waited that long")
        #expect(handoff.takeWaiting(longerThan: .zero).map(\.id) == [1, 3], "given back once they waited too long")
        #expect(handoff.take(limit: 10) { _ in true }.isEmpty)
    }

    /// A client whose messages fill three quarters of the room (its receiver hangs) is crowded:
    /// its new messages are written the ordinary way, and the rest of the room serves the others.
    @Test func aClientHoldingThreeQuartersOfTheRoomIsCrowdedOthersAreNot() throws {
        let handoff = OutboxHandoff(capacity: 8, leaseSeconds: 60)
        #expect(handoff.reserve(6) == 6)
        handoff.hand((1...5).map { Self.claimed($0, client: "hung") } + [Self.claimed(6, client: "other")], reserved: 6)
        #expect(handoff.crowdedClients().isEmpty, "five of eight is not three quarters")
        #expect(handoff.reserve(1) == 1)
        handoff.hand([Self.claimed(7, client: "hung")], reserved: 1)
        #expect(handoff.crowdedClients() == ["hung"])
        _ = handoff.take(limit: 1) { $0 == "hung" }
        #expect(handoff.crowdedClients().isEmpty, "below its share again once one was sent")
    }

    /// The worker takes after every send while many may wait: a take hands out no more than its
    /// free slots, the clients with room in turns, each one's oldest first.
    @Test func aTakeStopsAtTheFreeSlotsServingClientsInTurnsEachInOrder() throws {
        let handoff = OutboxHandoff(capacity: 10, leaseSeconds: 60)
        #expect(handoff.reserve(7) == 7)
        let clients = ["a", "full", "a", "b", "full", "a", "a"]
        handoff.hand(clients.enumerated().map { Self.claimed(Int64($0.offset + 1), client: $0.element) }, reserved: 7)
        var asked: [String] = []
        let first = handoff.take(limit: 3) { client in
            asked.append(client)
            return client != "full"
        }
        #expect(first.map(\.id) == [1, 4, 3], "three slots: a turn each for the clients with room, then a's next")
        #expect(asked == ["a", "full", "b", "a"], "a refused client is asked once, and nothing after the last slot")
        #expect(handoff.take(limit: 0) { _ in true }.isEmpty, "no free slot: nothing handed out")
        #expect(handoff.holds("full") && !handoff.holds("b"))
        #expect(handoff.take(limit: 1) { _ in true }.map(\.id) == [2], "those served last time wait for the others")
        let rest = handoff.take(limit: 10) { _ in true }.map(\.id)
        #expect(rest.filter { [6, 7].contains($0) } == [6, 7] && rest.filter { [5].contains($0) } == [5])
        #expect(rest.count == 3 && !handoff.holds("a") && !handoff.holds("full"))
        #expect(handoff.reserve(10) == 10, "what was taken no longer counts against the bound")
    }

    @Test func onlyTheFirstMessageOfAnAggregateAndTargetInABatchMayBeWrittenClaimed() throws {
        let messages = [
            try Self.message("app_store:1", target: .webhook, client: "a"),
            try Self.message("app_store:1", target: .delivery, client: "a"),
            try Self.message("app_store:1", target: .webhook, client: "a"),
            try Self.message("app_store:1", target: .webhook, client: "b"),
            try Self.message("app_store:2", target: .webhook, client: "a"),
        ]
        #expect(RecordBatcher.claimable(messages) == [true, true, false, true, true])
    }

    /// The statements every purchase and delivery run are prepared: their plan is made once for
    /// any batch and backlog. Even a generic plan made while Postgres believes nothing is pending
    /// looks each message's aggregate up by its index (an unfenced one hashed every pending entry,
    /// the delivered messages' dead ones too, for every batch), and evaluates that lookup once.
    @Test func preparedOutboxStatementsLookEachAggregateUpWhateverTheirPlanWasMadeFor() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let clientID = harness.client.clientID
        let message = try Self.message("app_store:plan", client: clientID)
        let plans = try await harness.pool.withConnection { connection -> [String] in
            try connection.execute("SET plan_cache_mode = force_generic_plan")
            defer { _ = try? connection.execute("RESET plan_cache_mode") }
            // Prepared by their own callers, then nothing written.
            try connection.execute("BEGIN")
            _ = try OutboxRepository.insert([message], claiming: [true], lease: 60, on: connection)
            try OutboxHeads.reseat([OutboxHeads.Aggregate(message.message)], on: connection)
            try connection.execute("ROLLBACK")
            // EXPLAIN takes no parameters: the client's id as a literal.
            let client = "'" + clientID.replacingOccurrences(of: "'", with: "''") + "'"
            let insert: PostgresQuery = """
                EXPLAIN EXECUTE receiptgate_outbox_insert_handed(ARRAY[gen_random_uuid()], ARRAY[\(unescaped: client)],
                    ARRAY['transaction.verified'], ARRAY['app_store:plan'], ARRAY['{}'], ARRAY['email'], ARRAY[true], ARRAY[0::float8], 60, 60)
                """
            let reseat: PostgresQuery =
                "EXPLAIN EXECUTE receiptgate_outbox_reseat_behind(ARRAY[\(unescaped: client)], ARRAY['app_store:plan'])"
            return try [insert, reseat].map { statement in
                try connection.query(statement).map { try $0.decode("QUERY PLAN", as: String.self) }
                    .joined(separator: "\n")
            }
        }
        for plan in plans {
            for wholeScan in ["Seq Scan on outbox", "Bitmap Heap Scan on outbox", "hashed SubPlan"] {
                #expect(!plan.contains(wholeScan), "\(plan)")
            }
            #expect(plan.contains("Index Cond: ((client_id = "), "each aggregate by its index: \(plan)")
        }
        // One lookup a message for what is pending of its aggregate, one for what is in flight.
        for index in ["outbox_aggregate on", "outbox_aggregate_key on"] {
            #expect(plans[0].components(separatedBy: "using \(index)").count == 2, "\(index): \(plans[0])")
        }
    }

    /// The delivered mark's plan, made once per connection in the worker's own transaction while
    /// the outbox is nearly empty (a fresh install), still finds the rows it marks by their ids:
    /// a plan that scanned the small table would go on scanning it, for every mark, as it grows.
    @Test func theDeliveredMarkFindsItsRowsByIdWhateverTheTableWasLikeWhenItsPlanWasMade() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let message = try Self.message("app_store:mark-plan", client: harness.client.clientID)
        let plan = try await harness.pool.withConnection { connection -> String in
            try connection.execute("SET plan_cache_mode = force_generic_plan")
            defer { _ = try? connection.execute("RESET plan_cache_mode") }
            try connection.execute("BEGIN")
            try connection.execute(OutboxRepository.bookkeepingSettings)
            let claimed = try OutboxRepository.insert([message], claiming: [true], lease: 60, on: connection)
            try OutboxRepository.markDelivered(claimed, on: connection)
            defer { _ = try? connection.execute("ROLLBACK") }
            // The plan the connection keeps for the statement.
            return try connection.query(
                "EXPLAIN EXECUTE receiptgate_outbox_delivered(ARRAY[1]::bigint[], ARRAY[now()]::timestamptz[])"
            ).map { try $0.decode("QUERY PLAN", as: String.self) }.joined(separator: "\n")
        }
        #expect(!plan.contains("Seq Scan on outbox"), "\(plan)")
        #expect(plan.contains("using outbox_pkey"), "\(plan)")
    }

    /// A stopping worker waits for the delivered marks of what its receivers answered: `settled()`
    /// returns only once a mark waiting on the database (here, on a lock of its row) is recorded.
    @Test func marksStillToBeRecordedAreWaitedForBySettled() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let claimed = [try await Self.claimedFromTheDatabase("app_store:settle", harness)]
        let batcher = DeliveredBatcher(outbox: harness.service.repositories.outbox)
        let locked = LockedBox(false), release = DispatchSemaphore(value: 0)
        let holder = Task {
            try await harness.pool.withTransaction { connection in
                _ = try connection.query("SELECT id FROM outbox WHERE aggregate_key = 'app_store:settle' FOR UPDATE")
                locked.set(true)
                release.wait()  // a thread of the pool's own, not the cooperative pool's
            }
        }
        defer { release.signal() }
        #expect(await eventually { locked.get() })
        let queued = LockedBox(false)
        let marking = Task { try await batcher.delivered(try #require(claimed.first)) { queued.set(true) } }
        #expect(await eventually { queued.get() })
        func markWaitsForItsRow() async -> Bool {
            let waiting = try? await harness.pool.query(
                """
                SELECT count(*) AS n FROM pg_stat_activity
                WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE outbox o SET status = ''delivered''%'
                """)
            return (try? waiting?.first?.decode("n", as: Int.self)) ?? 0 > 0
        }
        #expect(await eventually { await markWaitsForItsRow() })
        let settled = LockedBox(false)
        let settling = Task {
            await batcher.settled()
            settled.set(true)
        }
        #expect(await markWaitsForItsRow() && !settled.get(), "the mark waits, and so does settled()")
        release.signal()
        try await holder.value
        try await marking.value
        await settling.value
        #expect(
            try await harness.count("outbox WHERE aggregate_key = 'app_store:settle' AND status = 'delivered'") == 1)
    }

    /// A delivered mark whose commit failed (a connection lost, a failover) is recorded by a later
    /// try: a mark never recorded would have its message sent again once its lease ran out.
    @Test func aMarkWhoseCommitFailedIsRecordedByTheNextTry() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let claimed = [try await Self.claimedFromTheDatabase("app_store:retried-mark", harness)]
        let outbox = harness.service.repositories.outbox, tries = LockedBox(0)
        let batcher = DeliveredBatcher(outbox: outbox, retryPauses: [.milliseconds(10), .milliseconds(10)]) { events in
            guard
                tries.update({ tries -> Int in
                    tries += 1
                    return tries
                }) > 1
            else { throw PostgresError(.connectionFailed, "server closed the connection unexpectedly") }
            try await outbox.markDelivered(events)
        }
        try await batcher.delivered(try #require(claimed.first))
        #expect(tries.get() == 2)
        let row = try #require(
            try await harness.pool.query(
                "SELECT status, lease_until IS NULL AS released FROM outbox WHERE aggregate_key = 'app_store:retried-mark'"
            ).first)
        #expect(try row.decode("status", as: String.self) == "delivered")
        #expect(try row.decode("released", as: Bool.self))
    }

    /// A mark that keeps failing is given up after its tries, and its sender told: the message
    /// stays pending under its lease, to be sent again when that runs out (at least once).
    @Test func aMarkThatKeepsFailingIsGivenUpAndItsMessageStaysPending() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let claimed = [try await Self.claimedFromTheDatabase("app_store:unrecorded-mark", harness)]
        let tries = LockedBox(0)
        let batcher = DeliveredBatcher(
            outbox: harness.service.repositories.outbox, retryPauses: [.milliseconds(10), .milliseconds(10)]
        ) { _ in
            tries.update { $0 += 1 }
            throw PostgresError(.connectionFailed, "server closed the connection unexpectedly")
        }
        await #expect(throws: PostgresError.self) { try await batcher.delivered(try #require(claimed.first)) }
        #expect(tries.get() == 3, "the first try and one after each pause")
        #expect(
            try await harness.count(
                "outbox WHERE aggregate_key = 'app_store:unrecorded-mark' AND status = 'pending' AND lease_until > now()"
            )
                == 1)
        // A statement the server refused is no better a second time: given up at once.
        let refusing = DeliveredBatcher(
            outbox: harness.service.repositories.outbox, retryPauses: [.milliseconds(10), .milliseconds(10)]
        ) { _ in
            tries.update { $0 += 1 }
            throw PostgresError(.queryFailed, "syntax error", sqlState: "42601")
        }
        await #expect(throws: PostgresError.self) { try await refusing.delivered(try #require(claimed.first)) }
        #expect(tries.get() == 4)
    }

    /// A message is handed (written delivered, in flight, sent from memory) only when nothing of
    /// its aggregate is pending or in flight; the rest wait behind.
    @Test func aMessageIsHandedOnlyWhenNothingOfItsAggregateIsPendingOrInFlight() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let clientID = harness.client.clientID
        // An earlier message of aggregate 1 waits (its receiver was down, say).
        try await harness.pool.withTransaction { connection in
            try OutboxRepository.insert([try Self.message("app_store:1", client: clientID)], on: connection)
        }
        let claimed = try await harness.pool.withTransaction { connection in
            try OutboxRepository.insert(
                [try Self.message("app_store:1", client: clientID), try Self.message("app_store:2", client: clientID)],
                claiming: [true, true], lease: 60, on: connection)
        }
        #expect(claimed.map(\.aggregateKey) == ["app_store:2"], "aggregate 1's new message waits behind the old one")
        #expect(claimed.first?.attempts == 0 && claimed.first?.payload.contains("app_store:2") == true)
        #expect(claimed.first?.target == .email)
        // The harness's own worker may place aggregate 1 meanwhile (placing takes every target);
        // whatever it did, the newer message of aggregate 1 is neither its head nor leased.
        let rows = try await harness.pool.query(
            """
            SELECT aggregate_key, is_head, lease_until IS NOT NULL AS leased FROM outbox
            WHERE client_id = \(clientID) ORDER BY id
            """)
        let seen = try rows.map {
            "\(try $0.decode("aggregate_key", as: String.self)) head=\(try $0.decode("is_head", as: Bool.self)) leased=\(try $0.decode("leased", as: Bool.self))"
        }
        #expect(seen.count == 3)
        #expect(seen.dropFirst().first == "app_store:1 head=false leased=false")
        #expect(seen.first?.hasSuffix("leased=false") == true)
        #expect(seen.last == "app_store:2 head=false leased=true")
        #expect(
            try await harness.count("outbox WHERE aggregate_key = 'app_store:2' AND \(OutboxRepository.inFlight)") == 1,
            "written delivered, in flight")
        // In flight it is the writer's: no claim takes it.
        let outbox = harness.service.repositories.outbox
        let others = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
        #expect(!others.contains { $0.aggregateKey == "app_store:2" })
        // A later message of aggregate 2 is not handed while the first is in flight, and is not
        // placed (no head, nothing claimable) until its writer settles it.
        let later = try await harness.pool.withTransaction { connection in
            try OutboxRepository.insert(
                [try Self.message("app_store:2", client: clientID)], claiming: [true], lease: 60, on: connection)
        }
        #expect(later.isEmpty)
        _ = try await outbox.placeNew()
        #expect(
            try await outbox.claim(targets: [.email], limit: 10, lease: 60).allSatisfy {
                $0.aggregateKey != "app_store:2"
            })
        #expect(
            try await harness.count("outbox WHERE aggregate_key = 'app_store:2' AND status = 'pending' AND NOT placed")
                == 1)
        try await outbox.vouch(forBatches: [try #require(claimed.first?.handedIn)])
        let next = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
        #expect(next.map(\.aggregateKey) == ["app_store:2"], "settled: the later one is placed and claimed")
    }

    /// An older message of the aggregate committed after the new purchase's message was written
    /// claimed (its transaction began first): the message being sent stays the head, so the two
    /// are never both under way; the older one follows it.
    @Test func aMessageBeingSentStaysTheHeadWhenAnOlderOneCommitsLate() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let clientID = harness.client.clientID
        let inserted = DispatchSemaphore(value: 0), claimedWritten = DispatchSemaphore(value: 0)
        let older = Task {
            try await harness.pool.withTransaction { connection in
                try OutboxRepository.insert([try Self.message("app_store:5", client: clientID)], on: connection)
                inserted.signal()
                claimedWritten.wait()  // commits only after the claimed message was written
            }
        }
        await Task.detached { inserted.wait() }.value
        let claimed = try await harness.pool.withTransaction { connection in
            let held = try OutboxHeads.tryLock(
                [OutboxHeads.Aggregate(clientID: clientID, aggregateKey: "app_store:5", target: "email")],
                on: connection)
            #expect(held.count == 1)
            return try OutboxRepository.insert(
                [try Self.message("app_store:5", client: clientID)], claiming: [true], lease: 60, on: connection)
        }
        claimedWritten.signal()
        try await older.value
        #expect(claimed.count == 1, "the older message was not committed yet: nothing pending was seen")
        let outbox = harness.service.repositories.outbox
        _ = try await outbox.placeNew()
        func heads() async throws -> [Int64] {
            try await harness.pool.query(
                "SELECT id FROM outbox WHERE client_id = \(clientID) AND status = 'pending' AND is_head"
            ).map { try $0.decode("id", as: Int64.self) }
        }
        #expect(try await heads().isEmpty, "the older one waits, unplaced, while the newer is in flight")
        try await outbox.vouch(forBatches: [try #require(claimed.first?.handedIn)])
        _ = try await outbox.placeNew()
        let waiting = try await harness.pool.query(
            "SELECT id FROM outbox WHERE client_id = \(clientID) AND status = 'pending'"
        ).map { try $0.decode("id", as: Int64.self) }
        #expect(waiting.count == 1 && waiting.first != claimed.first?.id)
        #expect(try await heads() == waiting, "settled: the older one follows it")
    }

    /// Two writers of one aggregate: the second cannot hold its lock while the first does, so it
    /// writes its message the ordinary way instead of as a second head.
    @Test func anAggregateWrittenClaimedIsHeldUntilItsTransactionEnds() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let aggregate = OutboxHeads.Aggregate(
            clientID: harness.client.clientID, aggregateKey: "app_store:6", target: "email")
        let locked = DispatchSemaphore(value: 0), checked = DispatchSemaphore(value: 0)
        let first = Task {
            try await harness.pool.withTransaction { connection -> Int in
                let held = try OutboxHeads.tryLock([aggregate], on: connection)
                locked.signal()
                checked.wait()
                return held.count
            }
        }
        await Task.detached { locked.wait() }.value
        let second = try await harness.pool.withTransaction { try OutboxHeads.tryLock([aggregate], on: $0) }
        checked.signal()
        #expect(try await first.value == 1)
        #expect(second.isEmpty)
        #expect(try await harness.pool.withTransaction { try OutboxHeads.tryLock([aggregate], on: $0) }.count == 1)
    }

    /// The process that handed a message stopped before settling it: once the lease runs out, any
    /// worker puts it back in the pending state (`recoverHanded`), a claim takes it, and it is
    /// delivered once.
    @Test func aClaimedMessageNobodySentIsClaimedOnceItsLeaseRunsOut() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let outbox = harness.service.repositories.outbox, clientID = harness.client.clientID
        let written = try await harness.pool.withTransaction { connection in
            try OutboxRepository.insert(
                [try Self.message("app_store:9", client: clientID)], claiming: [true], lease: 1, on: connection)
        }
        #expect(written.count == 1)
        var reclaimed: [OutboxRepository.Claimed] = []
        try await WebhookDelivery.waitUntil {
            reclaimed = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
            return !reclaimed.isEmpty
        }
        #expect(reclaimed.map(\.eventID) == written.map(\.eventID))
        #expect(reclaimed.first?.attempts == 0, "the attempt it was handed for was never made")
        // The writer's late reports change nothing: the message is no longer under its lease.
        let late = try #require(written.first)
        try await outbox.release([late])
        try await outbox.park([late], until: 3600)
        try await outbox.markFailed(late, attempts: 1, error: "late", dead: false, retryInSeconds: 3600)
        #expect(
            try await harness.count(
                "outbox WHERE aggregate_key = 'app_store:9' AND status = 'pending' AND is_head AND lease_until > now() AND last_error IS NULL"
            ) == 1, "still the reclaiming sender's")
        try await outbox.markDelivered(reclaimed)
        #expect(try await harness.count("outbox WHERE status = 'delivered' AND attempts = 1") == 1)
    }
}
