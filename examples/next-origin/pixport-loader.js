// The loader reads NEXT_PUBLIC_PIXPORT_URL (pixport's public base URL) and
// NEXT_PUBLIC_PIXPORT_ORIGIN (the origin the image paths live on), inlined at build time.
// For origins by URL prefix, or rounding to an allow-list, use createNextLoader instead.
export { default } from "@pixport/url-signer/next";
