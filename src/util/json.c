/* JSON string escaping, one rule for buffers and streams (see json.h). */
#include "util/json.h"

/* c's text inside a JSON string into text (at most 7 bytes with its end). */
static const char *escaped(unsigned char c, char text[7])
{
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default:
        if (c < 0x20)
            snprintf(text, 7, "\\u%04x", c);
        else
            text[0] = (char)c, text[1] = '\0';
        return text;
    }
}

/* piece into buf at *len, as far as it fits; *len counts it whole */
static void put(char *buf, size_t size, size_t *len, const char *piece)
{
    for (const char *p = piece; *p; p++, (*len)++)
        if (*len + 1 < size)
            buf[*len] = *p;
}

size_t wp_json_string(char *buf, size_t size, const char *s)
{
    size_t len = 0;
    char text[7];
    put(buf, size, &len, "\"");
    for (const char *c = s; *c; c++)
        put(buf, size, &len, escaped((unsigned char)*c, text));
    put(buf, size, &len, "\"");
    if (size > 0)
        buf[len < size ? len : size - 1] = '\0';
    return len;
}

void wp_json_write_string(FILE *f, const char *s)
{
    char text[7];
    fputc('"', f);
    for (const char *c = s; *c; c++)
        fputs(escaped((unsigned char)*c, text), f);
    fputc('"', f);
}
