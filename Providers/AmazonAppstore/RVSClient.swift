import Foundation
import HTTPClient
import ReceiptCore

/// Amazon's Receipt Verification Service (`verifyReceiptId`, version 1.0). Retries are done here,
/// not by the HTTP client, because they must stop at the request's deadline and because RVS also
/// answers 410 for a moment's trouble.
struct RVSClient: Sendable {
    let baseURL: String
    let http: HTTPClient
    let retry: AmazonAppstoreConfiguration.Retry

    init(baseURL: String, http: HTTPClient, retry: AmazonAppstoreConfiguration.Retry) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.http = http
        self.retry = retry
    }

    /// The receipt's JSON as RVS answers it, from the Cloud Sandbox when `sandbox`.
    func verify(
        receiptID: String, userID: String, secret: String, sandbox: Bool,
        deadline: ContinuousClock.Instant?
    ) async throws(StoreAPIError) -> Data {
        let path =
            "/version/1.0/verifyReceiptId/developer/\(Self.segment(secret))/user/\(Self.segment(userID))/receiptId/\(Self.segment(receiptID))"
        let url = baseURL + (sandbox ? "/sandbox" : "") + path
        let response = try await send(url, deadline: deadline)
        guard response.status == 200 else {
            throw AmazonAPIErrors.answered(HTTPStatus(response.status), attempts: response.attempts)
        }
        return response.body
    }

    /// One path segment, every byte outside the unreserved set percent-encoded (receipt and user
    /// ids carry `=`, `/`, `+` and `:`).
    static func segment(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// GET with the HTTP client's retries (a transient answer or a lost connection tried again
    /// after back-off or the server's `Retry-After`, in either form), bounded by the deadline.
    /// Errors name the status and attempts, never the URL.
    private func send(
        _ url: String, deadline: ContinuousClock.Instant?
    ) async throws(StoreAPIError) -> (status: Int, body: Data, attempts: Int) {
        var request = HTTPClient.Request(url: url, headers: [("Accept", "application/json")])
        request.retry = HTTPClient.RetryPolicy(
            maxAttempts: retry.maxAttempts, baseDelay: retry.baseDelay, maxDelay: retry.maxDelay,
            maxRetryAfter: retry.maxRetryAfter, alsoRetried: [410])
        request.deadline = deadline
        do {
            let response = try await http.send(request)
            return (response.status, response.body, response.attempts)
        } catch let error as HTTPClientError {
            // The code only: curl's own text may quote the URL.
            throw AmazonAPIErrors.unavailable("RVS could not be reached (\(error.code))")
        } catch {
            throw AmazonAPIErrors.unavailable("the RVS call was cancelled")
        }
    }
}
