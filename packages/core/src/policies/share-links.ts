/*
 * Share links of consumer storage providers, turned into direct-download requests. A share link
 * points to an HTML preview page; the download request answers with a redirect to a provider
 * content host, and redirects are followed only to the hosts listed here for that provider
 * (never a broad wildcard such as `*.google.com`, which would let anyone host a "share link").
 */

/** Names of the share-link providers the policy knows. */
export type ShareLinkProviderName = "dropbox" | "google-drive" | "onedrive";

/** A share-link provider: the hosts of its share links, its download hosts and the rewrite. */
export interface ShareLinkProvider {
  name: ShareLinkProviderName;
  /** Hosts of the share links themselves (also listed in the allowed origins). */
  shareHosts: readonly string[];
  /** Host patterns a download request of this provider may be redirected to. */
  redirectHosts: readonly string[];
  /** The direct-download URL of a share link, or a problem sentence when the path is not a file link. */
  toDownloadUrl(url: URL): URL | string;
}

const DRIVE_ID = /^[A-Za-z0-9_-]{10,200}$/;

/** Dropbox: `/s/{id}/{name}` and `/scl/fi/{id}/{name}?rlkey=...` links; `dl=1` asks for the file. */
const dropbox: ShareLinkProvider = {
  name: "dropbox",
  shareHosts: ["www.dropbox.com"],
  redirectHosts: [
    "www.dropbox.com",
    "dl.dropbox.com",
    "dl.dropboxusercontent.com",
    // Per-file content hosts such as `uc6d1e...d5.dl.dropboxusercontent.com`.
    "*.dl.dropboxusercontent.com",
  ],
  toDownloadUrl(url) {
    if (!/^\/(?:s|scl\/fi)\/[^/]+\/[^/]+$/.test(url.pathname)) {
      return "must be a Dropbox file share link (https://www.dropbox.com/s/... or /scl/fi/...)";
    }
    const download = new URL(url.href);
    download.searchParams.delete("raw");
    download.searchParams.set("dl", "1");
    return download;
  },
};

/** Google Drive: `/file/d/{id}/...`, `/open?id={id}` and `/uc?id={id}` become `/uc?export=download&id={id}`. */
const googleDrive: ShareLinkProvider = {
  name: "google-drive",
  shareHosts: ["drive.google.com"],
  redirectHosts: [
    "drive.google.com",
    "drive.usercontent.google.com",
    "docs.google.com",
    // Legacy download hosts such as `doc-0s-4g-docs.googleusercontent.com`.
    "doc-*-docs.googleusercontent.com",
  ],
  toDownloadUrl(url) {
    const fileMatch = /^\/file\/d\/([^/]+)(?:\/(?:view|edit|preview)?)?$/.exec(url.pathname);
    const id =
      fileMatch?.[1] ??
      (url.pathname === "/open" || url.pathname === "/uc" ? url.searchParams.get("id") : null);
    if (id === null || id === undefined || !DRIVE_ID.test(id)) {
      return "must be a Google Drive file share link (https://drive.google.com/file/d/{id}/view)";
    }
    const download = new URL("https://drive.google.com/uc");
    download.searchParams.set("export", "download");
    download.searchParams.set("id", id);
    const resourceKey = url.searchParams.get("resourcekey");
    if (resourceKey !== null) download.searchParams.set("resourcekey", resourceKey);
    return download;
  },
};

/**
 * OneDrive short links (`https://1drv.ms/...`) become requests to the documented shares API,
 * `https://api.onedrive.com/v1.0/shares/u!{base64url(link)}/root/content`, which answers with a
 * redirect to the file's content host.
 */
const onedrive: ShareLinkProvider = {
  name: "onedrive",
  shareHosts: ["1drv.ms"],
  redirectHosts: [
    "api.onedrive.com",
    "onedrive.live.com",
    "my.microsoftpersonalcontent.com",
    // Content hosts such as `public.bn.files.1drv.com` and `xyz.bn1304.livefilestore.com`.
    "*.files.1drv.com",
    "*.*.files.1drv.com",
    "*.livefilestore.com",
    "*.*.livefilestore.com",
  ],
  toDownloadUrl(url) {
    if (url.pathname.length < 3) return "must be a OneDrive share link (https://1drv.ms/...)";
    const link = new URL(url.href);
    link.hash = "";
    // `href` is ASCII (percent-encoded, punycode), so btoa (available in every runtime) is safe.
    const encoded = btoa(link.href).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
    return new URL(`https://api.onedrive.com/v1.0/shares/u!${encoded}/root/content`);
  },
};

/** The share-link providers, by name. */
export const SHARE_LINK_PROVIDERS: Readonly<Record<ShareLinkProviderName, ShareLinkProvider>> = {
  dropbox,
  "google-drive": googleDrive,
  onedrive,
};
