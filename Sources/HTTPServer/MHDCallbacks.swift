import CMicroHTTPD
import Foundation

// The C callbacks of libmicrohttpd. Each gets the server as its `cls`, unretained: the server
// outlives its daemon (HTTPServer.shutdown stops the daemon). A connection's ConnectionWatch and a
// request's RequestState are retained when created (connectionStarted, requestLineArrived) and
// released exactly once (connectionClosed, requestCompleted).

let mhdAccessHandler: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, upload, uploadSize, requestContext in
    guard let context, let connection, let uploadSize, let requestContext else { return MHD_Result.NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    return server.handle(
        connection: connection, url: url.map { String(cString: $0) } ?? "/",
        method: method.map { String(cString: $0) } ?? "GET", upload: upload,
        uploadSize: uploadSize, requestContext: requestContext)
}

let mhdRequestCompleted: MHD_RequestCompletedCallback = { context, _, requestContext, _ in
    guard let context else { return }
    Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().requestCompleted(requestContext)
}

let mhdNotifyConnection: MHD_NotifyConnectionCallback = { context, connection, socketContext, code in
    guard let context, let connection, let socketContext else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    if code == .CONNECTION_NOTIFY_STARTED {
        server.connectionStarted(connection, socketContext: socketContext)
    } else {
        server.connectionClosed(socketContext: socketContext)
    }
}

let mhdRequestLineArrived:
    @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = {
        context, uri, connection in
        guard let context, let connection else { return nil }
        return Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
            .requestLineArrived(on: connection, target: uri.map { String(cString: $0) })
    }

let collectValue: MHD_KeyValueIterator = { context, _, key, value in
    guard let context, let key else { return MHD_Result.YES }
    let collector = Unmanaged<ValueCollector>.fromOpaque(context).takeUnretainedValue()
    let name = String(cString: key), text = value.map { String(cString: $0) } ?? ""
    if collector.collectingQuery {
        if collector.query[name] == nil { collector.query[name] = text }
    } else {
        collector.headers.add(name, text)
    }
    return MHD_Result.YES
}

final class ValueCollector {
    /// Room for a typical request's fields up front (growing 1, 2, 4, 8, 16 reallocated four times).
    var headers = HTTPHeaders(capacity: 16)
    var query: [String: String] = [:]
    var collectingQuery = false
}
