import CCurl
import CShims
import Foundation

/// One libcurl transfer, run synchronously on a worker thread with that thread's easy handle.
struct Transfer: Sendable {
    struct Outcome: Sendable {
        let status: Int
        let headers: [(name: String, value: String)]
        let body: Data
    }

    let method: String
    let url: String
    let headers: [(name: String, value: String)]
    let body: Data?
    let timeout: Duration
    let connectTimeout: Duration
    let maxResponseBytes: Int
    let caBundlePath: String?
    var destinations: DestinationPolicy = .any

    func run(on easy: EasyHandle) throws -> Outcome {
        let handle = easy.pointer
        curl_easy_reset(handle)  // clears options but keeps live connections for reuse
        // Resolved and checked here, on the worker thread; curl then connects to the checked address.
        var resolveList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(resolveList) }
        if let pin = try Destination.pin(url: url, policy: destinations) {
            resolveList = curl_slist_append(resolveList, pin)
        }
        let headerList = requestHeaderList()
        defer { curl_slist_free_all(headerList) }
        let sink = ResponseSink(limit: maxResponseBytes)
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

        let code: CURLcode = withExtendedLifetime(sink) {
            errorBuffer.withUnsafeMutableBufferPointer { errorPointer in
                var options = EasyOptions(handle: handle)
                setRequest(
                    &options, errorBuffer: errorPointer.baseAddress, headerList: headerList, resolveList: resolveList)
                setResponseCallbacks(&options, sink: Unmanaged.passUnretained(sink).toOpaque())
                // An empty body has no address of its own; libcurl reads none of its zero bytes.
                setMethodAndBody(&options, emptyBody: UnsafeMutableRawPointer(errorPointer.baseAddress!))
                guard options.allAccepted else { return CURLE_FAILED_INIT }
                return curl_easy_perform(handle)
            }
        }

        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            throw Self.error(for: code, reason: reason, sink: sink)
        }
        var status = 0
        _ = rg_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return Outcome(status: status, headers: sink.headers, body: sink.body)
    }

    /// The caller's headers as libcurl's list; the caller frees it.
    private func requestHeaderList() -> UnsafeMutablePointer<curl_slist>? {
        var headerList: UnsafeMutablePointer<curl_slist>?
        for header in headers {
            headerList = curl_slist_append(headerList, "\(header.name): \(header.value)")
        }
        // libcurl adds "Expect: 100-continue" to larger POSTs; upstream APIs gain nothing from it.
        return curl_slist_append(headerList, "Expect:")
    }

    /// Where the request goes and how: the URL and its checked address, TLS, timeouts, headers.
    @inline(__always)
    private func setRequest(
        _ options: inout EasyOptions, errorBuffer: UnsafeMutablePointer<CChar>?,
        headerList: UnsafeMutablePointer<curl_slist>?, resolveList: UnsafeMutablePointer<curl_slist>?
    ) {
        let handle = options.handle
        options.set(rg_curl_setopt_string(handle, CURLOPT_URL, url))
        options.set(rg_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        options.set(rg_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        options.set(rg_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        options.set(rg_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        if let caBundlePath { options.set(rg_curl_setopt_string(handle, CURLOPT_CAINFO, caBundlePath)) }
        options.set(rg_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        options.set(rg_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Self.milliseconds(timeout)))
        options.set(rg_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(connectTimeout)))
        options.set(rg_curl_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, ""))
        options.set(rg_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        options.set(rg_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))
        if resolveList != nil { options.set(rg_curl_setopt_slist(handle, CURLOPT_RESOLVE, resolveList)) }
        if destinations.checksHere {
            // A proxy from the environment would resolve the name again, elsewhere, or reach the
            // checked address from its own network: none for checked destinations.
            options.set(rg_curl_setopt_string(handle, CURLOPT_PROXY, ""))
        }
    }

    /// The response's headers and body go to `sink` (a `ResponseSink` the caller keeps alive).
    @inline(__always)
    private func setResponseCallbacks(_ options: inout EasyOptions, sink: UnsafeMutableRawPointer) {
        let handle = options.handle
        options.set(rg_curl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION, writeBody))
        options.set(rg_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, sink))
        options.set(rg_curl_setopt_write_function(handle, CURLOPT_HEADERFUNCTION, writeHeader))
        options.set(rg_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, sink))
    }

    @inline(__always)
    private func setMethodAndBody(_ options: inout EasyOptions, emptyBody: UnsafeMutableRawPointer) {
        let handle = options.handle
        if method == "HEAD" {
            options.set(rg_curl_setopt_long(handle, CURLOPT_NOBODY, 1))
        } else if method != "GET" {
            options.set(rg_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method))
        }
        guard let body else { return }
        options.set(rg_curl_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
        body.withUnsafeBytes { raw in
            // COPYPOSTFIELDS copies, so the bytes need not outlive this call.
            options.set(
                rg_curl_setopt_pointer(
                    handle, CURLOPT_COPYPOSTFIELDS,
                    raw.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? emptyBody))
        }
    }

    private static func error(for code: CURLcode, reason: String, sink: ResponseSink) -> HTTPClientError {
        switch code {
        case CURLE_WRITE_ERROR where sink.exceededLimit:
            return HTTPClientError(.responseTooLarge, "response body exceeded \(sink.limit) bytes")
        case CURLE_OPERATION_TIMEDOUT:
            return HTTPClientError(.timeout, reason)
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return HTTPClientError(.connectFailed, reason)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return HTTPClientError(.tlsFailure, reason)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return HTTPClientError(.invalidURL, reason)
        default:
            return HTTPClientError(.transport, reason)
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}

/// Options set on one easy handle; a refused one fails the transfer before it starts.
private struct EasyOptions {
    let handle: UnsafeMutableRawPointer
    private(set) var allAccepted = true

    @inline(__always)
    mutating func set(_ result: CURLcode) { allAccepted = allAccepted && result == CURLE_OK }
}

/// Collects one response: headers of the final status line and the body, up to a limit.
final class ResponseSink {
    let limit: Int
    var body = Data()
    var headers: [(name: String, value: String)] = []
    var exceededLimit = false

    init(limit: Int) { self.limit = limit }
}

private let writeBody: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if sink.body.count + length > sink.limit {
        sink.exceededLimit = true
        return 0  // anything but `length` makes libcurl abort with CURLE_WRITE_ERROR
    }
    sink.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length)
    return length
}

private let writeHeader: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, context in
    guard let data, let context else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    if line.hasPrefix("HTTP/") {
        sink.headers = []  // a new response (after 100 Continue): keep only the final one's headers
    } else if let colon = line.firstIndex(of: ":") {
        sink.headers.append(
            (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
    }
    return length
}
