import Foundation
import ReceiptCore
import TestSupport
import Xsolla
import XsollaTestSupport

/// The provider, client and requests the Xsolla suites share.
enum XsollaFixtures {
    static let clientID = "rgc_xsolla"

    static func provider(
        _ xsolla: FakeXsolla? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) -> XsollaProvider {
        XsollaProvider(
            configuration: xsolla?.configuration() ?? XsollaConfiguration(), http: FakeXsolla.http(),
            logger: Logger(minimumLevel: .error), now: now)
    }

    /// A client with the fake's project; `reportAccess: false` leaves out its API key, so its
    /// webhooks are taken on their signature without being read back from the report.
    static func client(
        knownPlayersOnly: Bool = false, projects: [String] = [FakeXsolla.projectID], reportAccess: Bool = true
    ) -> ClientWithStoreCredentials {
        let settings = FakeXsolla.clientSettings(knownPlayersOnly: knownPlayersOnly)
        var credentials = settings.credentials
        if !reportAccess { credentials[XsollaProvider.Setting.apiKey] = nil }
        return ClientWithStoreCredentials(
            client: ClientInfo(
                clientID: clientID, gameID: 7, appIdentifiers: [XsollaProvider.projectIDKind.name: projects],
                environments: [.production, .sandbox], settings: settings.settings),
            credentials: credentials)
    }

    static func request(
        _ webhook: FakeXsolla.Webhook, client: ClientWithStoreCredentials = client(),
        knownPlayers: Set<String> = []
    ) -> NotificationRequest {
        NotificationRequest(
            body: webhook.body, headers: webhook.headers, pathClient: client,
            knowsPlayer: { knownPlayers.contains($0) })
    }

    /// What the provider makes of `webhook`: its notifications, or the refusal and how it is answered.
    static func receive(
        _ provider: XsollaProvider, _ webhook: FakeXsolla.Webhook,
        client: ClientWithStoreCredentials = client(reportAccess: false),
        knownPlayers: Set<String> = []
    ) async -> (notifications: [StoreNotification], refusal: NotificationRejection?, answer: NotificationAnswer?) {
        do {
            let found = try await provider.receiveNotifications(
                request(webhook, client: client, knownPlayers: knownPlayers), registered: RegisteredApps())
            return (found, nil, provider.answer(to: .accepted(duplicate: false)))
        } catch let refusal as NotificationRejection {
            return ([], refusal, provider.answer(to: .refused(refusal)))
        } catch {
            return ([], NotificationRejection(.retryable, reason: "\(error)", message: ""), nil)
        }
    }

    /// An answer's error code (`{"error": {"code"}}`), or nil for an empty body.
    static func code(_ answer: NotificationAnswer?) -> String? {
        guard let body = answer?.body, !body.isEmpty,
            let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        else { return nil }
        return (object["error"] as? [String: Any])?["code"] as? String
    }
}
