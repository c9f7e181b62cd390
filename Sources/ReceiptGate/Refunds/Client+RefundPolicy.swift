package import ReceiptCore

/// How a client answers stores' refund requests, from its settings (`--consumption-consent`,
/// `--refund-decline-at`, `--refund-otherwise`, `--sample-content`).
extension Client {
    package static let consumptionConsentSetting = "refunds.consumption_consent"
    package static let refundDeclineAtSetting = "refunds.decline_at_percent"
    package static let refundOtherwiseSetting = "refunds.otherwise"
    package static let sampleContentSetting = "refunds.sample_content"

    package var refundPolicy: RefundPolicy {
        var policy = RefundPolicy()
        policy.consumptionConsent = settings[Self.consumptionConsentSetting] == ["on"]
        if let percent = settings[Self.refundDeclineAtSetting]?.first.flatMap(Int.init), (0...100).contains(percent) {
            policy.declineAtPercent = percent
        }
        if let otherwise = settings[Self.refundOtherwiseSetting]?.first.flatMap(RefundPreference.init(rawValue:)) {
            policy.otherwise = otherwise
        }
        policy.sampleContentProvided = settings[Self.sampleContentSetting] == ["on"]
        return policy
    }
}
