import Foundation
import HTTPServer
import TestSupport

/// Lets a browser test's Python side do what the game server's operator would: bring the webhook
/// receiver back up (`POST /accept`), and see which events it has acknowledged since
/// (`GET /acknowledged`). The receiver itself is the end-to-end tests' `WebhookReceiver`.
final class WebhookReceiverControl: Sendable {
    let server: HTTPServer

    init(_ receiver: WebhookReceiver) throws {
        var router = Router()
        router.post("/accept") { _ in
            receiver.up.set(true)
            return .json(["accepting": true])
        }
        router.get("/acknowledged") { _ in
            .json(["event_ids": receiver.acknowledged.map(\.eventID)])
        }
        server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0),
            responder: router.build(handlerExecutor: FakeServing.executor))
        try server.start()
    }

    var url: String { "http://127.0.0.1:\(server.port)" }
}
