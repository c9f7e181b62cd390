import Foundation
public import ReceiptCore

extension StripeProvider {
    /// Proves a Checkout Session id (`cs_…`) with Stripe, read with the client's key: a paid
    /// session's line items (payment mode) or the subscription's first period (subscription
    /// mode). A session not paid is refused. Throws `StoreVerificationError`.
    public func verify(evidence: String, context: VerificationContext) async throws -> [VerifiedPurchase] {
        let id = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        guard Self.isSessionID(id) else {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "MALFORMED_RECEIPT",
                message: "a Stripe receipt is a Checkout Session id (cs_…)")
        }
        let checkout: Checkout
        do {
            let access = try StripeAccess.of(
                client: context.client, credentials: context.credentials, accounts: context.appIdentifiers)
            checkout = try await self.checkout(
                id, caller: StripeAPI.Caller(apiKey: access.apiKey, deadline: context.deadline),
                account: access.account(named: nil))
        } catch let error as StoreAPIError {
            if error.kind == .credentialsRefused || error.kind == .notConfigured {
                logger.error(
                    "Stripe cannot be asked for this client; the operator must fix its API key",
                    ["client.id": context.client?.clientID ?? "", "problem": error.message])
            }
            throw error.verificationError
        }
        guard checkout.isPaid else {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "PAYMENT_NOT_COMPLETE",
                message:
                    "the Checkout Session's payment_status is \(checkout.session.string("payment_status") ?? "unknown"); "
                    + "it is delivered once Stripe says paid")
        }
        guard !checkout.purchases.isEmpty else {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "NO_PURCHASE", message: "the Checkout Session holds no purchase")
        }
        return checkout.purchases
    }

    /// `cs_test_…` or `cs_live_…` and the like: what a Checkout Session id looks like.
    static func isSessionID(_ text: String) -> Bool {
        text.hasPrefix("cs_") && (4...255).contains(text.utf8.count)
            && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_") }
    }
}
