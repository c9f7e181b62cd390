import Foundation
import HTTPClient
import HTTPServer
import OpenSSLCrypto
import ReceiptCore

/// One verification, whatever API it came through, in two steps. *Prove*: pick the store
/// provider, verify the evidence, cross-check product, app and environment, compare the account
/// token (network only). *Record*: one database transaction with everything that must commit
/// with the purchase. Every outcome is on record and in the log, the same way for every route.
public struct VerifyPipeline: Sendable {
    let stores: [StoreID: StoreRegistration]
    let transactions: TransactionRepository
    let clients: ClientRepository
    /// Where a client whose version check failed is read again.
    let directory: any ClientDirectory
    let logger: Logger
    /// Group commit for verifications without effects.
    var batcher: RecordBatcher?
    /// Counts every outcome for `/metrics` and the console.
    var tally: VerificationTally?
    /// How much of the request's time its store calls leave for recording and answering: they
    /// end that long before the request's own deadline, so a provider makes no call (or retry)
    /// whose answer would come too late.
    var timeLeftForRecording: Duration?
    /// The orders the service started, for a store that starts them (`OrderStarting`).
    var orders: OrderRepository?

    /// A fifth of the request's time: at least 2 s, but never more than half of a short request's.
    static func timeLeftForRecording(requestTimeout: Duration) -> Duration {
        max(requestTimeout * 0.2, min(.seconds(2), requestTimeout / 2))
    }

    init(
        stores: [StoreRegistration], transactions: TransactionRepository, clients: ClientRepository,
        directory: any ClientDirectory,
        logger: Logger
    ) {
        self.stores = Dictionary(stores.map { ($0.store, $0) }, uniquingKeysWith: { first, _ in first })
        self.transactions = transactions
        self.clients = clients
        self.directory = directory
        self.logger = logger
    }

    var storeNames: [String] { stores.keys.map(\.rawValue).sorted() }

    /// Throws `StoreVerificationError` for every refusal; each is recorded as an attempt.
    func prove(_ request: VerificationRequest, client: Client) async throws -> ProvenPurchase {
        let digest = try SHA256.hex(Data(request.evidence.utf8))
        // The transaction a refusal is about, once the store has proved one: an order lookup shows it.
        var refusedTransaction: String?
        do {
            guard let registration = stores[request.store] else {
                throw StoreVerificationError(
                    code: .invalidField, reason: "UNKNOWN_STORE",
                    message: "store must be one of \(storeNames.joined(separator: ", ")), got \"\(request.store)\"")
            }
            let provider = registration.verifier
            let (apps, evidenceFields) = try VerificationChecks.beforeTheStore(
                request, client: client.info, declaration: registration.declaration)
            var context = VerificationContext(
                appIdentifiers: apps, environments: Set(client.environments), productID: request.productID,
                client: client.info, credentials: try await credentials(of: client, for: request.store),
                evidenceKind: request.evidenceKind)
            context.transactionID = request.transactionID
            if let timeLeftForRecording, let requestDeadline = RequestDeadline.current {
                context.deadline = requestDeadline - timeLeftForRecording
            }
            context.evidenceFields = evidenceFields
            if registration.orderStarter != nil {
                context.order = try await order(named: request.evidence, store: request.store, client: client)
            }
            // Every call the store's client makes for it ends by the deadline, retries included.
            let purchases: [VerifiedPurchase]
            do {
                purchases = try await OutboundDeadline.$current.withValue(context.deadline) {
                    try await provider.verify(evidence: request.evidence, context: context)
                }
            } catch let error as StoreVerificationError where error.reason == StoreVerificationError.orderClosedReason {
                if let order = context.order {
                    try await orders?.closed(store: request.store, orderID: order.orderID, reason: error.message)
                }
                throw error
            }
            if let order = context.order {
                try await orders?.finished(store: request.store, orderID: order.orderID)
            }
            var proven = try VerificationChecks.proven(
                purchases, request: request, client: client.info, evidenceDigest: digest
            ) { refusedTransaction = $0 }
            // An order is bought whole: every item is its buyer's once the order is finished,
            // whichever one this request asked about.
            if context.order != nil {
                proven.boughtWith = purchases.filter {
                    $0.transactionID != proven.purchase.transactionID && $0.buyer != nil
                        && client.info.environments.contains($0.environment)
                }
            }
            return proven
        } catch let error as StoreVerificationError {
            await refused(
                error, request: request, clientID: client.clientID, digest: digest, transactionID: refusedTransaction)
            throw error
        }
    }

    /// The order a verification of a store that starts orders names: started by this client and
    /// not closed. Counts the attempt, so a retry after a lost answer is known as one.
    private func order(named evidence: String, store: StoreID, client: Client) async throws -> OrderRecord {
        let orderID = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let orders, !orderID.isEmpty, orderID.utf8.count <= 64,
            let found = try await orders.beginFinishing(store: store, orderID: orderID, clientID: client.clientID)
        else {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "ORDER_NOT_FOUND",
                message: "the receipt names no order this client started with \(store) (POST /v1/orders)")
        }
        switch found {
        case .open(let record): return record
        case .closed(let reason):
            throw StoreVerificationError.orderClosed(
                "the order can no longer be finished" + (reason.map { ": \($0)" } ?? ""))
        }
    }

    /// The client's secret settings for this store, opened only when it has some.
    func credentials(of client: Client, for store: StoreID) async throws -> [String: String] {
        guard client.hasSealedSettings else { return [:] }
        return try await clients.sealedSettings(of: client.clientID, prefix: "\(store.rawValue).")
    }

    /// Records once with the caller's effects; logs the outcome line. `version` is the client's
    /// row version when it was read, checked in the transaction (the read may be from memory).
    func record<T: Sendable>(
        _ proven: ProvenPurchase, client: Client, version: Int64,
        effects: @escaping @Sendable (VerificationOutcome, any RecordScope) throws -> T
    ) async throws -> (VerificationOutcome, T) {
        do {
            var (client, version) = (client, version)
            let result: (VerificationOutcome, T)
            do {
                result = try await transactions.record(
                    proven, client: client, expectedVersion: version,
                    effects: withAcknowledgement(proven, client: client, effects: effects))
            } catch is ClientChanged {
                let current = try await reloadChanged(client, proven: proven)
                (client, version) = (current.client, current.version)
                result = try await transactions.record(
                    proven, client: client, expectedVersion: version,
                    effects: withAcknowledgement(proven, client: client, effects: effects))
            }
            logVerified(result.0, proven: proven, client: client)
            return result
        } catch let error as StoreVerificationError {
            await refused(
                error, request: proven.request, clientID: client.clientID, digest: proven.evidenceDigest,
                transactionID: proven.purchase.transactionID)
            throw error
        }
    }

    func refused(
        _ error: StoreVerificationError, request: VerificationRequest, clientID: String, digest: String,
        transactionID: String? = nil
    ) async {
        logger.info(
            "refused",
            [
                "request.id": request.requestID, "client.id": clientID, "store": request.store.rawValue,
                "error.code": error.code.rawValue, "error.reason": error.reason,
            ])
        tally?.recordRefused(
            store: request.store.rawValue, storeError: error.code == .verifierError, reason: error.reason)
        await transactions.recordFailure(
            clientID: clientID, store: request.store.rawValue, requestID: request.requestID, playerID: request.playerID,
            evidenceDigest: digest, code: error.code.rawValue, reason: error.reason, message: error.message,
            transactionID: transactionID)
    }
}
