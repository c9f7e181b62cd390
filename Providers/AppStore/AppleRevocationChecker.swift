public import Foundation
package import HTTPClient
public import OpenSSLCrypto
import ReceiptCore

/// Optional online revocation checks (OCSP) of App Store certificate chains, as Apple's library
/// does with online checks on: the leaf (asked of its intermediate's responder) and the
/// intermediate (of the root's). A good answer is remembered for `lifetime` per chain (at most
/// 256 chains), and one check of a chain serves every request waiting for it. A network failure
/// is retryable, never an acceptance; revoked or unknown is a final refusal; neither is remembered.
public final class AppleRevocationChecker: Sendable {
    private let http: HTTPClient
    private let trustRoots: [Certificate]
    private let remembered: ExpiringCache<Data, Bool>
    private let lifetime: TimeInterval
    private let now: @Sendable () -> Date

    package init(
        http: HTTPClient, trustRoots: [Certificate], lifetime: TimeInterval = 15 * 60,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.http = http
        self.trustRoots = trustRoots
        self.lifetime = lifetime
        self.now = now
        remembered = ExpiringCache(now: now, maxEntries: 256)
    }

    /// How many chains were asked about (tests count them).
    package var checks: Int { get async { await remembered.fetches } }

    public func check(
        chainKey: Data, leaf: Certificate, intermediate: Certificate
    ) async throws(AppStoreVerificationError) {
        guard let root = trustRoots.first(where: { $0.isIssuer(of: intermediate) }) else {
            throw AppStoreVerificationError(.chainNotTrusted, "no configured root issued the intermediate")
        }
        do {
            _ = try await remembered.value(for: chainKey) { [self] in
                try await ask(about: leaf, issuer: intermediate)
                try await ask(about: intermediate, issuer: root)
                return (true, now().addingTimeInterval(lifetime))
            }
        } catch let error as AppStoreVerificationError {
            throw error
        } catch {
            throw AppStoreVerificationError(
                .revocationCheckUnavailable, "the revocation check did not finish: \(error)")
        }
    }

    private func ask(about certificate: Certificate, issuer: Certificate) async throws(AppStoreVerificationError) {
        let query: OCSPQuery
        do {
            query = try OCSPQuery(certificate: certificate, issuer: issuer)
        } catch {
            throw AppStoreVerificationError(.revocationCheckUnavailable, "cannot build an OCSP request: \(error)")
        }
        guard let url = query.responderURL else {
            throw AppStoreVerificationError(
                .revocationCheckUnavailable, "\(certificate.subject) names no OCSP responder")
        }
        let response: HTTPClient.Response
        do {
            var request = HTTPClient.Request(
                method: "POST", url: url, headers: [("Content-Type", "application/ocsp-request")],
                body: query.requestDER)
            request.timeout = .seconds(5)
            response = try await http.send(request)
        } catch {
            throw AppStoreVerificationError(.revocationCheckUnavailable, "OCSP responder unreachable: \(error)")
        }
        guard response.status == 200 else {
            throw AppStoreVerificationError(
                .revocationCheckUnavailable, "OCSP responder answered HTTP \(response.status)")
        }
        let status: OCSPStatus
        do {
            status = try query.evaluate(responseDER: response.body, issuer: issuer, trustRoots: trustRoots)
        } catch {
            throw AppStoreVerificationError(.revocationCheckUnavailable, "unusable OCSP answer: \(error)")
        }
        guard status == .good else {
            throw AppStoreVerificationError(
                .certificateRevoked,
                "\(certificate.subject) is \(status == .revoked ? "revoked" : "not known") to its OCSP responder")
        }
    }
}
