import AppStore
import Foundation
import HTTPClient
import ReceiptCore
import ReceiptGate
import TestSupport

/// A service for fault tests, started like `VerifyHarness` but on a database and with an App
/// Store provider the test chooses (a private cluster it can kill, an HTTP client with short
/// timeouts towards a misbehaving upstream). Logs are dropped: these tests provoke errors.
struct FaultService {
    let service: Service
    let database: Database
    let client: SignedClient

    static func start(
        databaseURL: String, provider: AppStoreProvider, dialects: [any DialectProvider] = [],
        environments: [StoreEnvironment] = [.production, .sandbox]
    ) async throws -> FaultService {
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.databaseURL = databaseURL
        configuration.masterKey = Data(repeating: 6, count: 32)
        configuration.dataDirectory = TestDatabase.temporaryDirectory("fault")
        let logger = Logger(minimumLevel: .error, sink: LogSink { _ in })
        let database = try Database.open(configuration, logger: logger)
        let service = try Service(
            configuration: configuration, logger: logger, database: database, stores: [provider.registration],
            dialects: dialects)
        try await service.start()
        let created = try await service.clients.create(VerifyHarness.settings(environments: environments, gameID: 42))
        return FaultService(
            service: service, database: database,
            client: SignedClient(port: service.port, clientID: created.client.clientID, secret: created.secret))
    }

    func stop() {
        let service = service
        Task.detached { await service.shutdown() }
    }
}
