"""A CIMD fetcher for tests: the client's https metadata URL is served by a loopback http server.

Only the transport differs from DOT's ``SafeMetadataFetcher`` (which refuses anything but
public https hosts): the document is really fetched, and read by DOT's own ``_read_document``.
"""

import os
from urllib.parse import urlsplit

import urllib3
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher, _validate_client_id_url


class LoopbackFetcher(SafeMetadataFetcher):
    def fetch(self, client_id):
        parsed = _validate_client_id_url(client_id)
        port = os.environ.get("MCP_CIMD_PORT")
        if not port:
            raise CIMDError("no loopback CIMD server configured")
        url = f"http://127.0.0.1:{port}{urlsplit(client_id).path}"
        http = urllib3.PoolManager()
        response = http.request("GET", url, headers={"Host": parsed.netloc}, redirect=False, preload_content=False)
        try:
            return self._read_document(response)
        finally:
            response.release_conn()
