import CCurl
import CShims
package import Foundation
import Workers

/// Sends mail over SMTP with libcurl: `smtps://` (implicit TLS) or `smtp://` with STARTTLS
/// required unless `insecure`. One transfer at a time per worker thread, never on Swift's
/// cooperative pool.
package final class SMTPClient: Sendable {
    package struct Configuration: Sendable {
        package var url: String
        package var user: String?
        package var password: String?
        package var insecure: Bool
        package var timeout: Duration = .seconds(30)

        package init(url: String, user: String? = nil, password: String? = nil, insecure: Bool = false) {
            self.url = url
            self.user = user
            self.password = password
            self.insecure = insecure
        }
    }

    let configuration: Configuration
    private let workers = TransferWorkers(transfers: 1, name: "smtp-client")

    package init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    deinit { workers.close() }

    /// Sends one RFC 5322 message (headers and body, CRLF line ends) from `from` to `to`.
    package func send(from: String, to: [String], message: Data) async throws {
        let configuration = configuration
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let queued = workers.submit { easy in
                do {
                    try Self.transfer(on: easy, configuration: configuration, from: from, to: to, message: message)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            if !queued { continuation.resume(throwing: HTTPClientError(.clientClosed, "SMTP client closed")) }
        }
    }

    private static func transfer(
        on easy: EasyHandle, configuration: Configuration, from: String, to: [String], message: Data
    ) throws {
        let handle = easy.pointer
        curl_easy_reset(handle)
        var recipients: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(recipients) }
        for address in to { recipients = curl_slist_append(recipients, "<\(address)>") }
        let source = MessageSource(message)
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let implicitTLS = configuration.url.lowercased().hasPrefix("smtps://")
        let code: CURLcode = withExtendedLifetime(source) {
            errorBuffer.withUnsafeMutableBufferPointer { errorPointer in
                var ok = true
                func set(_ result: CURLcode) { ok = ok && result == CURLE_OK }
                set(rg_curl_setopt_string(handle, CURLOPT_URL, configuration.url))
                set(rg_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "smtp,smtps"))
                set(rg_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
                set(
                    rg_curl_setopt_long(
                        handle, CURLOPT_TIMEOUT_MS, max(1, Int(configuration.timeout.components.seconds) * 1000)))
                set(rg_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, 10_000))
                // STARTTLS (or implicit TLS) is required; only an explicit insecure setting allows plain text.
                if !implicitTLS {
                    set(
                        rg_curl_setopt_long(
                            handle, CURLOPT_USE_SSL,
                            Int(configuration.insecure ? CURLUSESSL_NONE.rawValue : CURLUSESSL_ALL.rawValue)))
                }
                set(rg_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
                set(rg_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
                if let user = configuration.user { set(rg_curl_setopt_string(handle, CURLOPT_USERNAME, user)) }
                if let password = configuration.password {
                    set(rg_curl_setopt_string(handle, CURLOPT_PASSWORD, password))
                }
                set(rg_curl_setopt_string(handle, CURLOPT_MAIL_FROM, "<\(from)>"))
                set(rg_curl_setopt_slist(handle, CURLOPT_MAIL_RCPT, recipients))
                set(rg_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorPointer.baseAddress))
                // The read callback has the write callback's C signature.
                set(rg_curl_setopt_write_function(handle, CURLOPT_READFUNCTION, readMessage))
                set(rg_curl_setopt_pointer(handle, CURLOPT_READDATA, Unmanaged.passUnretained(source).toOpaque()))
                set(rg_curl_setopt_long(handle, CURLOPT_UPLOAD, 1))
                set(rg_curl_setopt_off_t(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(message.count)))
                guard ok else { return CURLE_FAILED_INIT }
                return curl_easy_perform(handle)
            }
        }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            throw HTTPClientError(
                code == CURLE_OPERATION_TIMEDOUT
                    ? .timeout
                    : code == CURLE_COULDNT_CONNECT
                        ? .connectFailed
                        : code == CURLE_USE_SSL_FAILED ? .tlsFailure : .transport, "SMTP: \(reason)")
        }
    }
}

/// The message being uploaded and how much of it libcurl has read.
private final class MessageSource {
    let bytes: [UInt8]
    var offset = 0

    init(_ data: Data) { bytes = Array(data) }
}

private let readMessage: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    buffer, size, count, context in
    guard let buffer, let context else { return 0 }
    let source = Unmanaged<MessageSource>.fromOpaque(context).takeUnretainedValue()
    let length = min(size * count, source.bytes.count - source.offset)
    guard length > 0 else { return 0 }
    source.bytes.withUnsafeBufferPointer { all in
        guard let base = all.baseAddress else { return }
        UnsafeMutableRawPointer(buffer).copyMemory(from: base + source.offset, byteCount: length)
    }
    source.offset += length
    return length
}
