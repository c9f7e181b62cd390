import Foundation
import HTTPClient
import ReceiptCore
import Stripe
import StripeTestSupport
import TestSupport

/// A provider asking a fresh `FakeStripe`, on the fake's clock, and what a webhook to the
/// client's endpoint looks like to it.
struct StripeHarness {
    let fake: FakeStripe
    let provider: StripeProvider

    init(retries: Int = 1) throws {
        fake = try FakeStripe()
        var http = HTTPClient.Configuration()
        http.retry = HTTPClient.RetryPolicy(maxAttempts: retries, baseDelay: .milliseconds(1))
        http.sleep = { _ in }
        let fake = fake
        provider = StripeProvider(
            configuration: try fake.configuration(), http: HTTPClient(http), now: { fake.now })
    }

    /// The webhook as the core hands it over for `owner`'s endpoint.
    func request(
        _ webhook: FakeStripe.Webhook, owner: ClientWithStoreCredentials? = nil, headers: [String: String]? = nil
    ) -> NotificationRequest {
        NotificationRequest(
            body: webhook.body, headers: headers ?? webhook.headers, pathClient: owner ?? fake.owner())
    }

    func receive(
        _ webhook: FakeStripe.Webhook, owner: ClientWithStoreCredentials? = nil, headers: [String: String]? = nil
    ) async throws -> [StoreNotification] {
        try await provider.receiveNotifications(
            request(webhook, owner: owner, headers: headers),
            registered: RegisteredApps(appIdentifiers: [FakeStripe.account], environments: [.sandbox, .production]))
    }

    /// The context a `/v1/verify` of this client's gives the provider.
    func context(owner: ClientWithStoreCredentials? = nil) -> VerificationContext {
        let owner = owner ?? fake.owner()
        return VerificationContext(
            appIdentifiers: [FakeStripe.account], environments: [.sandbox, .production], client: owner.client,
            credentials: owner.credentials)
    }

    /// Requests that reached Stripe's API.
    var calls: Int { fake.state.requests.get().count }
}

/// The rejection a call threw, or nil.
func rejection(_ body: () async throws -> Void) async -> NotificationRejection? {
    do { try await body() } catch let error as NotificationRejection { return error } catch { return nil }
    return nil
}

func verificationError(_ body: () async throws -> Void) async -> StoreVerificationError? {
    do { try await body() } catch let error as StoreVerificationError { return error } catch { return nil }
    return nil
}
